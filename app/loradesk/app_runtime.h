// The two ways the app runs: with the window (engine started in the background, single instance,
// tray, settings) and headless (engine + HTTP server, no display; what the systemd user unit starts).
#pragma once

#include <QApplication>
#include <QCoreApplication>

#include "launch_options.h"

namespace loradesk::app {

int runDesktop(QApplication& app, LaunchOptions launch);
int runHeadless(QCoreApplication& app, LaunchOptions launch);

}  // namespace loradesk::app
