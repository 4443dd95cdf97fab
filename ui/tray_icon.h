// TrayIcon: the system-tray entry (only where a tray exists): show/hide the window, open the
// Playground, quit. With a tray, closing the window keeps the server running in the background.
#pragma once

#include <QSystemTrayIcon>

namespace loradesk::ui {

class MainWindow;

class TrayIcon : public QSystemTrayIcon {
    Q_OBJECT
  public:
    explicit TrayIcon(MainWindow* window);
    // Creates and shows the icon when the desktop has a tray; nullptr otherwise.
    static TrayIcon* createIfAvailable(MainWindow* window);

    void showServing(const QString& baseUrl);

  private:
    MainWindow* m_window;
};

}  // namespace loradesk::ui
