// loradesk: the desktop application. Parses the same engine options as `loradeskd serve`, starts the
// engine in the background and shows the main window; with --headless (or no display) it serves
// without a window, which is what the systemd user unit runs.
#include <QApplication>
#include <QCoreApplication>
#include <QIcon>
#include <cstdio>

#include "app_runtime.h"
#include "cli.h"
#include "core/error.h"
#include "core/heap_policy.h"
#include "core/log.h"

namespace {

std::vector<std::string> arguments(int argc, char** argv) { return std::vector<std::string>(argv + 1, argv + argc); }

bool hasDisplay() {
    return qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY") ||
           qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace loradesk;
    keep_freed_heap();  // LoRA host copies come and go all day (core/heap_policy.h)
    const auto specs = app::launchOptionSpecs();
    app::LaunchOptions launch;
    try {
        cli::Args args(arguments(argc, argv), specs);
        if (args.help()) {
            cli::Command c{"loradesk", "The LoraDesk desktop application.", "loradesk [options]", specs, nullptr};
            std::fputs(cli::help_text(c).c_str(), stdout);
            return 0;
        }
        if (args.flag("version")) {
            std::printf("loradesk %s\n", LORADESK_VERSION);
            return 0;
        }
        launch = app::parseLaunchOptions(args);
        if (args.has("log-level")) {
            log::Level level;
            if (!log::parse_level(args.get("log-level"), &level))
                throw_expected(ErrorCode::invalid_argument, "--log-level must be trace, debug, info, warn or error");
            log::set_level(level);
        }
        launch.headless = launch.headless || !hasDisplay();
    } catch (const Error& e) {
        std::fprintf(stderr, "loradesk: %s\n", e.what());
        return 2;
    }

    QCoreApplication::setOrganizationName(QStringLiteral("loradesk"));
    QCoreApplication::setApplicationName(QStringLiteral("loradesk"));
    QCoreApplication::setApplicationVersion(QStringLiteral(LORADESK_VERSION));
    if (launch.headless) {
        QCoreApplication app(argc, argv);
        return app::runHeadless(app, std::move(launch));
    }
    QApplication app(argc, argv);
    QGuiApplication::setDesktopFileName(QStringLiteral("org.loradesk.LoraDesk"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("org.loradesk.LoraDesk")));
    return app::runDesktop(app, std::move(launch));
}
