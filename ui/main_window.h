// MainWindow: the desktop application's window — a navigation list on the left and one page per view
// (Dashboard, Adapters, Adapter detail, Models, Playground, Server, Logs, Settings), each with its icon. It owns the
// poller that feeds the pages engine snapshots and the log model that the Logs view shows. The engine comes from
// outside (EngineHost in the app, a test double in tests); so does the HTTP server's ServerControl.
#pragma once

#include <QMainWindow>
#include <memory>

#include "api/engine.h"
#include "ui/models/server_control.h"

class QListWidget;
class QProgressBar;
class QStackedWidget;

namespace loradesk::ui {

class AdapterDetailPage;
class AdaptersPage;
class DashboardPage;
class EnginePoller;
class LogModel;
class LogsPage;
class ModelsPage;
class PlaygroundPage;
class ServerPage;
class SettingsPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    enum Page { Dashboard, Adapters, Detail, Models, Playground, Server, Logs, Settings, PageCount };

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void showStarting(const QString& what);
    void setEngine(std::shared_ptr<api::Engine> engine);
    void showEngineFailure(const QString& message);
    void setServerControl(ServerControl* control);
    void setServerConfig(const ServerConfig& config);
    void setCloseToTray(bool on) { m_closeToTray = on; }

    void showPage(Page page);
    Page currentPage() const;
    QWidget* page(Page page) const;
    static QString pageTitle(Page page);
    static QString pageIconName(Page page);  // ui/icons/<name>.svg

    EnginePoller* poller() const { return m_poller; }
    LogModel* logModel() const { return m_logModel; }
    DashboardPage* dashboard() const { return m_dashboard; }
    AdaptersPage* adapters() const { return m_adapters; }
    AdapterDetailPage* detail() const { return m_detail; }
    ModelsPage* models() const { return m_models; }
    PlaygroundPage* playground() const { return m_playground; }
    ServerPage* server() const { return m_server; }
    LogsPage* logs() const { return m_logs; }
    SettingsPage* settings() const { return m_settings; }

  signals:
    void folderImported(const QString& folder);
    void serverConfigChanged(const loradesk::ui::ServerConfig& config);
    void modelChosen(const QString& id);  // the Models page's "use as base model" (a Hub id)

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    void onSnapshot();

    std::shared_ptr<api::Engine> m_engine;
    EnginePoller* m_poller;
    LogModel* m_logModel;
    QListWidget* m_nav;
    QProgressBar* m_starting;  // indeterminate while the engine loads
    QStackedWidget* m_stack;
    DashboardPage* m_dashboard;
    AdaptersPage* m_adapters;
    AdapterDetailPage* m_detail;
    ModelsPage* m_models;
    PlaygroundPage* m_playground;
    ServerPage* m_server;
    LogsPage* m_logs;
    SettingsPage* m_settings;
    bool m_closeToTray = false;
};

}  // namespace loradesk::ui
