// The system-tray entry.
#include "ui/tray_icon.h"

#include <QApplication>
#include <QMenu>

#include "ui/main_window.h"

namespace loradesk::ui {

TrayIcon::TrayIcon(MainWindow* window) : QSystemTrayIcon(window), m_window(window) {
    setIcon(QIcon::fromTheme(QStringLiteral("org.loradesk.LoraDesk"), window->windowIcon()));
    setToolTip(tr("LoraDesk"));
    auto* menu = new QMenu(window);
    menu->addAction(tr("Show LoraDesk"), window, [window] {
        window->show();
        window->raise();
        window->activateWindow();
    });
    menu->addAction(tr("Playground"), window, [window] {
        window->showPage(MainWindow::Playground);
        window->show();
        window->raise();
    });
    menu->addSeparator();
    menu->addAction(tr("Quit"), qApp, &QCoreApplication::quit);
    setContextMenu(menu);
    connect(this, &QSystemTrayIcon::activated, window, [window](ActivationReason reason) {
        if (reason != Trigger) return;
        window->setVisible(!window->isVisible());
        if (window->isVisible()) window->raise();
    });
}

TrayIcon* TrayIcon::createIfAvailable(MainWindow* window) {
    if (!QSystemTrayIcon::isSystemTrayAvailable()) return nullptr;
    auto* tray = new TrayIcon(window);
    tray->show();
    window->setCloseToTray(true);
    return tray;
}

void TrayIcon::showServing(const QString& baseUrl) {
    setToolTip(baseUrl.isEmpty() ? tr("LoraDesk — server stopped") : tr("LoraDesk — serving on %1").arg(baseUrl));
}

}  // namespace loradesk::ui
