// What `loradeskd serve` and the desktop app's headless mode share: resolving the default model (the
// demo kit), building the engine and the HTTP server from ServeOptions, and a clean shutdown.
#pragma once

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
    void stop();                   // refuses new requests, ends streams, joins; idempotent

private:
    std::unique_ptr<api::Engine> m_engine;
    std::unique_ptr<server::Router> m_router;
    std::unique_ptr<server::HttpServer> m_http;
    std::string m_host;
    bool m_stopped = false;
};

}  // namespace loradesk::cli
