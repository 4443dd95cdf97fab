// The first-start choice of model.
#include "ui/first_run_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

#include "hub/hf_cache.h"
#include "ui/models/async_call.h"
#include "ui/models/format.h"
#include "ui/models/hub_cache_scan.h"

namespace loradesk::ui {

namespace {

struct CachedModels {
    QString dir;
    QList<CachedRepo> models;
};

CachedModels scanModels() {
    CachedModels c;
    try {
        c.dir = QString::fromStdString(hub::hub_cache_dir());
        for (const CachedRepo& r : scanHubCache(c.dir))
            if (r.kind == CachedRepo::Kind::model) c.models << r;
    } catch (const std::exception&) {
        // no cache folder can be formed (no HOME): only the demo kit is offered
    }
    return c;
}

}  // namespace

FirstRunDialog::FirstRunDialog(QWidget* parent) : QDialog(parent) {
    setObjectName("firstRunDialog");
    setWindowTitle(tr("Welcome to LoraDesk"));
    auto* outer = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Which model should LoraDesk serve?"), this);
    QFont bigger = intro->font();
    bigger.setPointSizeF(bigger.pointSizeF() * 1.2);
    intro->setFont(bigger);
    outer->addWidget(intro);
    m_demo = new QRadioButton(tr("The demo kit: a small model with four adapters, to try LoraDesk right away"), this);
    m_demo->setObjectName("demoChoice");
    m_cached = new QRadioButton(tr("A model from the Hugging Face cache on this machine:"), this);
    m_cached->setObjectName("cachedChoice");
    m_models = new QListWidget(this);
    m_models->setObjectName("cachedModels");
    m_note = new QLabel(tr("Looking in the Hugging Face cache…"), this);
    m_note->setObjectName("firstRunNote");
    m_note->setWordWrap(true);
    outer->addWidget(m_demo);
    outer->addWidget(m_cached);
    outer->addWidget(m_models, 1);
    outer->addWidget(m_note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Start"));
    outer->addWidget(buttons);
    resize(560, 380);

    m_demo->setChecked(true);
    m_cached->setEnabled(false);
    m_models->setEnabled(false);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_demo, &QRadioButton::toggled, this, &FirstRunDialog::updateChoice);
    connect(m_models, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0) m_cached->setChecked(true);
    });
    connect(m_models, &QListWidget::itemDoubleClicked, this, &QDialog::accept);

    runAsync<CachedModels>(this, scanModels, [this](CachedModels c) {
        m_scanning = false;
        for (const CachedRepo& r : c.models) {
            auto* item = new QListWidgetItem(tr("%1  (%2)").arg(r.id, formatBytes(uint64_t(r.bytes))), m_models);
            item->setData(Qt::UserRole, r.id);
            item->setToolTip(r.snapshot);
        }
        const bool any = !c.models.isEmpty();
        m_cached->setEnabled(any);
        m_models->setEnabled(any);
        m_note->setText(any ? tr("Settings and the Models page change this later.")
                            : tr("The Hugging Face cache (%1) holds no models yet. Start with the demo kit; the "
                                 "Models page downloads models from the Hub.")
                                  .arg(c.dir));
        emit scanned();
    });
}

void FirstRunDialog::updateChoice() {
    if (m_demo->isChecked()) m_models->clearSelection();
}

QString FirstRunDialog::chosenModel() const {
    if (!m_cached->isChecked() || !m_models->currentItem()) return {};
    return m_models->currentItem()->data(Qt::UserRole).toString();
}

void FirstRunDialog::chooseModel(const QString& id) {
    for (int i = 0; i < m_models->count(); ++i) {
        if (m_models->item(i)->data(Qt::UserRole).toString() != id) continue;
        m_models->setCurrentRow(i);
        m_cached->setChecked(true);
        return;
    }
}

void FirstRunDialog::chooseDemo() { m_demo->setChecked(true); }

}  // namespace loradesk::ui
