#include "ui/main_window.h"

#include <QStatusBar>

#include "ui/status_page.h"

namespace loradesk::ui {

MainWindow::MainWindow(EngineHost* host, QWidget* parent) : QMainWindow(parent), m_host(host) {
    setWindowTitle(tr("LoraDesk"));
    resize(900, 600);
    m_status = new StatusPage(this);
    setCentralWidget(m_status);
    const auto& o = host->options();
    m_status->showLoading(tr("Loading %1 …").arg(QString::fromStdString(o.model_dir)));
    statusBar()->showMessage(tr("Starting the engine…"));
}

void MainWindow::engineReady(const QString& serverAddress) {
    m_status->showEngine(m_host->engine(), serverAddress);
    statusBar()->showMessage(serverAddress.isEmpty() ? tr("Engine ready") : tr("Serving on %1").arg(serverAddress));
}

void MainWindow::engineFailed(const QString& message) {
    m_status->showFailure(message);
    statusBar()->showMessage(tr("Engine failed to start"));
}

}  // namespace loradesk::ui
