// MainWindow: the desktop application's window. Owns the pages; the engine comes from EngineHost.
#pragma once

#include <QMainWindow>

#include "ui/engine_host.h"

namespace loradesk::ui {

class StatusPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(EngineHost* host, QWidget* parent = nullptr);

    // Called once the engine is ready and the HTTP server (if any) listens at `serverAddress`.
    void engineReady(const QString& serverAddress);
    void engineFailed(const QString& message);

private:
    EngineHost* m_host;
    StatusPage* m_status;
};

}  // namespace loradesk::ui
