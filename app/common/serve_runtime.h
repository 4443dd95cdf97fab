// What `loradeskd serve` and the desktop app's headless mode share: resolving the default model (the
// demo kit), building the engine and the HTTP server from ServeOptions, and a clean shutdown.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "api/engine.h"
#include "engine_cli.h"
#include "server/http_server.h"
#include "server/router.h"

namespace loradesk::cli {

// Fills engine.model_dir and the demo adapters when no model was given. Throws Error(not_found) with
// what to do when there is neither a model nor a demo kit.
void resolve_default_model(ServeOptions& options);

class ServerHost {
  public:
    // Builds the engine and starts listening. Throws Error with the reason (port taken, bad model, ...).
    explicit ServerHost(const ServeOptions& options);
    ~ServerHost();  // stop()

    api::Engine& engine() { return *m_engine; }
    std::string address() const;  // http://127.0.0.1:8080
    // Refuses new requests (503), lets the running and queued ones finish for up to `drain` (cut short when
    // `cut_short` becomes true), then cancels what is left, ends streams and joins. Idempotent.
    void stop(std::chrono::milliseconds drain = {}, const std::atomic<bool>* cut_short = nullptr);

  private:
    std::unique_ptr<api::Engine> m_engine;
    std::unique_ptr<server::Router> m_router;
    std::unique_ptr<server::HttpServer> m_http;
    std::string m_host;
    bool m_stopped = false;
};

// Blocks SIGINT and SIGTERM in the calling thread and returns them; call it before any thread starts, so that
// only serve_until_stop_signal receives them.
sigset_t block_stop_signals();
// Waits for a stop signal, then host.stop(drain): a second signal cuts the drain short, and a stop that has not
// finished 15 s after the drain (a wedged device call, say) ends the process rather than leaving it half alive
// with its port open.
void serve_until_stop_signal(ServerHost& host, const sigset_t& stop_signals, std::chrono::seconds drain);

}  // namespace loradesk::cli
