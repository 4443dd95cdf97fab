// ServerControl over engine/server: a Router over the engine and an HttpServer bound to host:port.
// Each start() builds both anew so that the host, port and key can change between runs.
#include "core/log.h"
#include "server/http_server.h"
#include "server/router.h"
#include "server_factory.h"

namespace loradesk::app {

namespace {

class HttpServerControl : public ui::ServerControl {
  public:
    HttpServerControl(std::shared_ptr<api::Engine> engine, std::vector<std::string> adapterRoots)
        : m_engine(std::move(engine)), m_adapterRoots(std::move(adapterRoots)) {}
    ~HttpServerControl() override { stop(); }

    Status start(const ui::ServerConfig& config) override {
        stop();
        server::ServerOptions options;
        options.host = config.host;
        options.port = config.port;
        options.api_key = config.api_key;
        options.adapter_roots = m_adapterRoots;
        m_router = std::make_unique<server::Router>(*m_engine, options);
        m_server = std::make_unique<server::HttpServer>(*m_router);
        Status status = m_server->start();
        if (status.ok()) log::info("serving on http://{}:{}/v1", config.host, m_server->port());
        if (!status.ok()) {
            m_server.reset();
            m_router.reset();
        }
        return status;
    }

    void stop() override {
        if (m_server) m_server->stop();
        m_server.reset();
        m_router.reset();
    }

    // Started and not stopped: the port is bound from start() on, even before the accept loop spins up.
    bool running() const override { return m_server != nullptr; }
    int port() const override { return m_server ? m_server->port() : 0; }

  private:
    std::shared_ptr<api::Engine> m_engine;
    std::vector<std::string> m_adapterRoots;
    std::unique_ptr<server::Router> m_router;  // outlives m_server (destroyed after it)
    std::unique_ptr<server::HttpServer> m_server;
};

}  // namespace

std::unique_ptr<ui::ServerControl> makeServerControl(std::shared_ptr<api::Engine> engine,
                                                     std::vector<std::string> adapterRoots) {
    return std::make_unique<HttpServerControl>(std::move(engine), std::move(adapterRoots));
}

}  // namespace loradesk::app
