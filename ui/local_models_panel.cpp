// The "On this machine" tab.
#include "ui/local_models_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "core/error.h"
#include "hub/hf_cache.h"
#include "ui/models/async_call.h"
#include "ui/models/hub_cache_model.h"

namespace loradesk::ui {

namespace {

struct Scan {
    QString dir, error;
    QList<CachedRepo> repos;
};

Scan scanDefaultCache() {
    Scan s;
    try {
        s.dir = QString::fromStdString(hub::hub_cache_dir());
        s.repos = scanHubCache(s.dir);
    } catch (const std::exception& e) {
        s.error = QString::fromStdString(e.what());
    }
    return s;
}

}  // namespace

LocalModelsPanel::LocalModelsPanel(QWidget* parent)
    : QWidget(parent), m_model(new HubCacheModel(this)), m_sorted(new QSortFilterProxyModel(this)) {
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(HubCacheModel::SortRole);
    auto* outer = new QVBoxLayout(this);
    m_where = new QLabel(this);
    m_where->setObjectName("cacheDirLabel");
    m_where->setWordWrap(true);
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_where);

    m_table = new QTableView(this);
    m_table->setObjectName("cachedTable");
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(HubCacheModel::Id, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(HubCacheModel::Id, QHeaderView::Stretch);
    outer->addWidget(m_table, 1);

    auto* actions = new QHBoxLayout;
    m_refresh = new QPushButton(tr("Refresh"), this);
    m_refresh->setObjectName("refreshCacheButton");
    m_serve = new QPushButton(tr("Serve adapter"), this);
    m_serve->setObjectName("serveCachedButton");
    m_serve->setToolTip(tr("Load this adapter into the running engine, named after the repository"));
    m_useModel = new QPushButton(tr("Use as base model"), this);
    m_useModel->setObjectName("useModelButton");
    m_useModel->setToolTip(tr("Serve this model from the next start on (as --model ID would)"));
    actions->addWidget(m_refresh);
    actions->addStretch(1);
    actions->addWidget(m_serve);
    actions->addWidget(m_useModel);
    outer->addLayout(actions);

    connect(m_refresh, &QPushButton::clicked, this, &LocalModelsPanel::refresh);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &LocalModelsPanel::updateButtons);
    connect(m_serve, &QPushButton::clicked, this, [this] {
        const CachedRepo* r = m_model->repoAt(m_model->rowOf(selectedId()));
        if (r && r->kind == CachedRepo::Kind::adapter) emit serveRequested(r->id.section('/', 1), r->snapshot);
    });
    connect(m_useModel, &QPushButton::clicked, this, [this] {
        if (!selectedId().isEmpty()) emit modelChosen(selectedId());
    });
    updateButtons();
}

void LocalModelsPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_scannedOnce) refresh();  // the first look scans; later ones keep the list until Refresh or a download
}

void LocalModelsPanel::refresh() {
    if (m_scanning) {
        m_again = true;  // the scan under way may have missed what changed: scan once more when it lands
        return;
    }
    m_scanning = true;
    m_scannedOnce = true;
    m_refresh->setEnabled(false);
    runAsync<Scan>(this, scanDefaultCache, [this](Scan s) {
        m_scanning = false;
        if (m_again) {
            m_again = false;
            refresh();
            return;
        }
        m_refresh->setEnabled(true);
        const QString selected = selectedId();
        m_cacheDir = s.dir;
        m_model->setRepos(s.repos);
        if (!s.error.isEmpty())
            m_where->setText(s.error);
        else if (s.repos.isEmpty())
            m_where->setText(
                tr("The Hugging Face cache (%1) holds no models yet: Discover finds and downloads them.").arg(s.dir));
        else
            m_where->setText((s.repos.size() == 1 ? tr("1 repository") : tr("%1 repositories").arg(s.repos.size())) +
                             tr(" in the Hugging Face cache (%1), shared with transformers and vLLM.").arg(s.dir));
        selectRepo(selected);
        updateButtons();
        emit scanned();
    });
}

QString LocalModelsPanel::selectedId() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? QString() : rows.first().data(HubCacheModel::IdRole).toString();
}

bool LocalModelsPanel::selectRepo(const QString& id) {
    for (int r = 0; r < m_sorted->rowCount(); ++r) {
        if (m_sorted->index(r, 0).data(HubCacheModel::IdRole).toString() != id) continue;
        m_table->selectRow(r);
        return true;
    }
    return false;
}

void LocalModelsPanel::setServingAvailable(bool on) {
    m_canServe = on;
    updateButtons();
}

void LocalModelsPanel::updateButtons() {
    const CachedRepo* r = m_model->repoAt(m_model->rowOf(selectedId()));
    m_serve->setEnabled(m_canServe && r && r->kind == CachedRepo::Kind::adapter);
    m_useModel->setEnabled(r && r->kind == CachedRepo::Kind::model);
}

}  // namespace loradesk::ui
