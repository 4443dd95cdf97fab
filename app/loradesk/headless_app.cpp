// Headless mode: no window, no display. The same engine + HTTP server as `loradeskd serve`
// (cli::ServerHost), with the desktop app's remembered settings applied; serves until SIGINT/SIGTERM,
// then stops accepting, ends streams and shuts the engine down (systemd's stop sequence).
#include <QSettings>
#include <csignal>
#include <cstdio>

#include "app_runtime.h"
#include "core/error.h"
#include "core/log.h"
#include "serve_runtime.h"

namespace loradesk::app {

int runHeadless(QCoreApplication&, LaunchOptions launch) {
    QSettings store;
    const std::string problem = resolveModel(launch, ui::AppSettings::load(store));
    if (!problem.empty()) {
        std::fprintf(stderr, "loradesk: %s\n", problem.c_str());
        return 2;
    }
    // Block the shutdown signals before any engine or server thread starts, so only sigwait gets them.
    const sigset_t stopSignals = cli::block_stop_signals();
    try {
        log::info("loading {}{}", launch.serve.engine.model_dir, launch.serve.demo ? " (demo kit)" : "");
        cli::ServerHost host(launch.serve);
        std::printf("loradesk: listening on %s\n", host.address().c_str());
        std::fflush(stdout);
        cli::serve_until_stop_signal(host, stopSignals, std::chrono::seconds(launch.serve.shutdown_timeout_s));
    } catch (const Error& e) {
        std::fprintf(stderr, "loradesk: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace loradesk::app
