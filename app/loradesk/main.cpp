// loradesk: the desktop application. Parses the same engine options as `loradeskd serve`, starts the
// engine in the background and shows the main window; with --headless (or no display) it serves
// without a window, which is what the systemd user unit runs.
#include <QApplication>
#include <QCoreApplication>
#include <QMessageBox>

#include <cstdio>
#include <memory>

#include "app_runtime.h"
#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "ui/engine_host.h"
#include "ui/main_window.h"

namespace {

std::vector<std::string> arguments(int argc, char** argv) { return std::vector<std::string>(argv + 1, argv + argc); }

bool has_display() { return qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY"); }

}  // namespace

int main(int argc, char** argv) {
    using namespace loradesk;
    auto specs = cli::engine_option_specs();
    specs.push_back({"headless", "", "serve without a window (also implied when there is no display)"});
    cli::ServeOptions options;
    bool headless = false;
    try {
        cli::Args args(arguments(argc, argv), specs);
        if (args.help()) {
            cli::Command c{"loradesk", "The LoraDesk desktop application.", "loradesk [options]", specs, nullptr};
            std::fputs(cli::help_text(c).c_str(), stdout);
            return 0;
        }
        options = cli::serve_options_from_args(args);
        headless = args.flag("headless") || (!has_display() && qEnvironmentVariable("QT_QPA_PLATFORM") != "offscreen");
    } catch (const Error& e) {
        std::fprintf(stderr, "loradesk: %s\n", e.what());
        return 2;
    }

    QCoreApplication::setOrganizationName("loradesk");
    QCoreApplication::setApplicationName("loradesk");
    QCoreApplication::setApplicationVersion(LORADESK_VERSION);
    if (headless) {
        QCoreApplication app(argc, argv);
        return app::run_headless(app, options);
    }
    QApplication app(argc, argv);
    QGuiApplication::setDesktopFileName("org.loradesk.LoraDesk");
    return app::run_desktop(app, options);
}
