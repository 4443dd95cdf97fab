// The main window: navigation, pages, snapshot fan-out.
#include "ui/main_window.h"

#include <QCloseEvent>
#include <QHBoxLayout>
#include <QListWidget>
#include <QProgressBar>
#include <QStackedWidget>
#include <QStatusBar>
#include <iterator>

#include "ui/adapter_detail_page.h"
#include "ui/adapters_page.h"
#include "ui/dashboard_page.h"
#include "ui/logs_page.h"
#include "ui/models/engine_poller.h"
#include "ui/models/log_model.h"
#include "ui/models_page.h"
#include "ui/playground_page.h"
#include "ui/server_page.h"
#include "ui/settings_page.h"
#include "ui/theme.h"

namespace loradesk::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_poller(new EnginePoller(this)), m_logModel(new LogModel(5000, this)) {
    new LogSink(m_logModel);  // owned by the model; collects the engine log from the first line on
    setWindowTitle(tr("LoraDesk"));
    resize(1100, 720);
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    m_nav = new QListWidget(central);
    m_nav->setObjectName("navigation");
    m_nav->setFixedWidth(180);
    m_nav->setIconSize(QSize(20, 20));
    m_nav->setSpacing(2);
    m_nav->setFrameShape(QFrame::NoFrame);
    // A sidebar, as current desktop apps draw one: the window's colour, roomy rows, the selection rounded.
    m_nav->setStyleSheet(
        QStringLiteral("QListWidget#navigation { background: transparent; outline: 0; show-decoration-selected: 1; }"
                       "QListWidget#navigation::item { padding: 6px 8px; border-radius: 6px; }"
                       "QListWidget#navigation::item:hover { background: palette(midlight); }"
                       "QListWidget#navigation::item:selected { background: palette(highlight);"
                       " color: palette(highlighted-text); }"));
    m_stack = new QStackedWidget(central);
    layout->addWidget(m_nav);
    layout->addWidget(m_stack, 1);
    setCentralWidget(central);
    m_starting = new QProgressBar(this);
    m_starting->setObjectName("startingBar");
    m_starting->setRange(0, 0);
    m_starting->setMaximumWidth(160);
    m_starting->hide();
    statusBar()->addPermanentWidget(m_starting);

    m_dashboard = new DashboardPage(m_stack);
    m_adapters = new AdaptersPage(m_stack);
    m_detail = new AdapterDetailPage(m_stack);
    m_models = new ModelsPage(m_stack);
    m_playground = new PlaygroundPage(m_stack);
    m_server = new ServerPage(m_stack);
    m_logs = new LogsPage(m_logModel, m_stack);
    m_settings = new SettingsPage(m_stack);
    for (int p = 0; p < PageCount; ++p) {
        m_stack->addWidget(page(Page(p)));
        m_nav->addItem(new QListWidgetItem(navigationIcon(pageIconName(Page(p))), pageTitle(Page(p))));
    }
    connect(m_nav, &QListWidget::currentRowChanged, m_stack, &QStackedWidget::setCurrentIndex);
    m_nav->setCurrentRow(Dashboard);

    connect(m_poller, &EnginePoller::updated, this, &MainWindow::onSnapshot);
    connect(m_adapters, &AdaptersPage::changed, m_poller, &EnginePoller::refreshNow);
    connect(m_adapters, &AdaptersPage::folderImported, this, &MainWindow::folderImported);
    connect(m_adapters, &AdaptersPage::detailsRequested, this, [this](const QString& name) {
        m_detail->showAdapter(name);
        showPage(Detail);
    });
    connect(m_models, &ModelsPage::adaptersChanged, m_poller, &EnginePoller::refreshNow);
    connect(m_models, &ModelsPage::modelChosen, this, &MainWindow::modelChosen);
    connect(m_server, &ServerPage::configChanged, this, &MainWindow::serverConfigChanged);
    connect(m_server, &ServerPage::runningChanged, this, [this](bool on, const QString& url) {
        statusBar()->showMessage(on ? tr("Serving on %1").arg(url) : tr("HTTP server stopped"));
    });
}

MainWindow::~MainWindow() { m_poller->setEngine(nullptr); }

QString MainWindow::pageTitle(Page page) {
    switch (page) {
        case Dashboard:
            return tr("Dashboard");
        case Adapters:
            return tr("Adapters");
        case Detail:
            return tr("Adapter detail");
        case Models:
            return tr("Models");
        case Playground:
            return tr("Playground");
        case Server:
            return tr("Server");
        case Logs:
            return tr("Logs");
        case Settings:
            return tr("Settings");
        default:
            return {};
    }
}

QString MainWindow::pageIconName(Page page) {
    static const char* names[] = {"dashboard",  "adapters", "detail", "models",
                                  "playground", "server",   "logs",   "settings"};
    static_assert(std::size(names) == PageCount);
    return page >= 0 && page < PageCount ? QLatin1String(names[page]) : QString();
}

QWidget* MainWindow::page(Page page) const {
    switch (page) {
        case Dashboard:
            return m_dashboard;
        case Adapters:
            return m_adapters;
        case Detail:
            return m_detail;
        case Models:
            return m_models;
        case Playground:
            return m_playground;
        case Server:
            return m_server;
        case Logs:
            return m_logs;
        case Settings:
            return m_settings;
        default:
            return nullptr;
    }
}

void MainWindow::showPage(Page page) { m_nav->setCurrentRow(int(page)); }
MainWindow::Page MainWindow::currentPage() const { return Page(m_stack->currentIndex()); }

void MainWindow::showStarting(const QString& what) {
    m_dashboard->showMessage(what);
    m_starting->show();
    statusBar()->showMessage(tr("Starting the engine…"));
}

void MainWindow::setEngine(std::shared_ptr<api::Engine> engine) {
    m_engine = engine;
    m_adapters->setEngine(engine);
    m_detail->setEngine(engine);
    m_models->setEngine(engine);
    m_playground->setEngine(engine);
    m_poller->setEngine(engine);
    m_starting->hide();
    statusBar()->showMessage(tr("Engine ready"));
}

void MainWindow::showEngineFailure(const QString& message) {
    m_starting->hide();
    m_dashboard->showMessage(tr("The engine could not start: %1").arg(message));
    statusBar()->showMessage(tr("Engine failed to start"));
}

void MainWindow::setServerControl(ServerControl* control) { m_server->setControl(control); }
void MainWindow::setServerConfig(const ServerConfig& config) { m_server->setConfig(config); }

void MainWindow::onSnapshot() {
    const EngineSnapshot& s = m_poller->last();
    m_dashboard->showSnapshot(s);
    m_adapters->setAdapters(s.adapters);
    m_playground->setAdapters(s.adapters);
    m_server->setAdapters(s.adapters, QString::fromStdString(s.model.id));
    m_models->setServedModel(QString::fromStdString(s.model.id));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_closeToTray) {
        hide();
        event->ignore();
        return;
    }
    QMainWindow::closeEvent(event);
}

}  // namespace loradesk::ui
