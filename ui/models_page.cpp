// The Models view.
#include "ui/models_page.h"

#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/discover_panel.h"
#include "ui/local_models_panel.h"
#include "ui/models/async_call.h"

namespace loradesk::ui {

ModelsPage::ModelsPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName("modelsTabs");
    m_local = new LocalModelsPanel(m_tabs);
    m_discover = new DiscoverPanel(m_tabs);
    m_tabs->addTab(m_local, tr("On this machine"));
    m_tabs->addTab(m_discover, tr("Discover"));
    outer->addWidget(m_tabs, 1);
    m_message = new QLabel(this);
    m_message->setObjectName("modelsMessage");
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_message);

    connect(m_discover, &DiscoverPanel::downloaded, m_local, &LocalModelsPanel::refresh);
    connect(m_discover, &DiscoverPanel::serveRequested, this, &ModelsPage::serveAdapter);
    connect(m_local, &LocalModelsPanel::serveRequested, this, &ModelsPage::serveAdapter);
    connect(m_local, &LocalModelsPanel::modelChosen, this, [this](const QString& id) {
        showMessage(tr("%1 will be served from the next start on (Settings keeps it as the base model).").arg(id),
                    false);
        emit modelChosen(id);
    });
}

void ModelsPage::setEngine(std::shared_ptr<api::Engine> engine) {
    m_engine = std::move(engine);
    m_local->setServingAvailable(m_engine != nullptr);
    m_discover->setServingAvailable(m_engine != nullptr);
}

void ModelsPage::setServedModel(const QString& id) { m_discover->setBaseModel(id); }
void ModelsPage::showTab(Tab tab) { m_tabs->setCurrentIndex(int(tab)); }
QString ModelsPage::message() const { return m_message->text(); }

void ModelsPage::showMessage(const QString& text, bool error) {
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: #c0392b;") : QString());
}

void ModelsPage::serveAdapter(const QString& name, const QString& folder) {
    if (!m_engine || m_busy) return;
    m_busy = true;
    showMessage(tr("Loading %1 from %2…").arg(name, folder), false);
    auto engine = m_engine;
    const std::string n = name.toStdString(), f = folder.toStdString();
    runAsync<Status>(
        this, [engine, n, f] { return engine->load_adapter(n, f); },
        [this, name](Status status) {
            m_busy = false;
            if (status.ok()) {
                showMessage(tr("%1 is served: requests name it as the model, as with any adapter.").arg(name), false);
                emit adaptersChanged();
            } else {
                showMessage(tr("Serving %1 failed: %2").arg(name, QString::fromStdString(status.message)), true);
            }
        });
}

}  // namespace loradesk::ui
