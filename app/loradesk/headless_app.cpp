// Headless mode: no window, no display. Loads the engine, serves HTTP until SIGINT/SIGTERM, then
// stops accepting, lets streams end and shuts the engine down (systemd's stop sequence).
#include <QSettings>
#include <QTimer>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "app_runtime.h"
#include "core/log.h"
#include "server_factory.h"

namespace loradesk::app {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void onStopSignal(int) { g_stop = true; }

}  // namespace

int runHeadless(QCoreApplication& app, LaunchOptions launch) {
    QSettings store;
    const std::string problem = resolveModel(launch, ui::AppSettings::load(store));
    if (!problem.empty()) {
        std::fprintf(stderr, "loradesk: %s\n", problem.c_str());
        return 2;
    }
    log::info("loading {}{}", launch.serve.engine.model_dir, launch.serve.demo ? " (demo kit)" : "");
    auto created = api::create_engine(launch.serve.engine);
    if (!created.ok()) {
        std::fprintf(stderr, "loradesk: %s\n", created.status().message.c_str());
        return 1;
    }
    std::shared_ptr<api::Engine> engine(std::move(created).value().release());
    auto server = makeServerControl(engine, launch.serve.engine.adapter_dirs);
    if (!server) {
        std::fprintf(stderr, "loradesk: this build has no HTTP server, so --headless has nothing to serve\n");
        engine->shutdown();
        return 1;
    }
    const Status started = server->start({launch.serve.host, launch.serve.port, launch.serve.api_key});
    if (!started.ok()) {
        std::fprintf(stderr, "loradesk: %s\n", started.message.c_str());
        engine->shutdown();
        return 1;
    }
    log::info("serving the OpenAI-compatible API on http://{}:{}/v1", launch.serve.host, server->port());

    std::signal(SIGINT, onStopSignal);
    std::signal(SIGTERM, onStopSignal);
    QTimer watch;
    QObject::connect(&watch, &QTimer::timeout, &app, [&app] {
        if (g_stop) app.quit();
    });
    watch.start(200);
    const int rc = app.exec();
    log::info("stopping");
    server->stop();
    engine->shutdown();
    return rc;
}

}  // namespace loradesk::app
