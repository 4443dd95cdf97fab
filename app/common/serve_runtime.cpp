#include "serve_runtime.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "demo_kit.h"

namespace loradesk::cli {

void resolve_default_model(ServeOptions& o) {
    if (!o.engine.model_dir.empty() && !o.demo) return;
    auto kit = find_demo_kit();
    if (!kit)
        throw_expected(ErrorCode::not_found,
                       "no --model given and the demo kit was not found (set LORADESK_DEMO_DIR to a folder with "
                       "model/ and adapters/, or pass --model DIR)");
    o.engine.model_dir = kit->model_dir;
    for (auto& a : kit->adapters) o.engine.named_adapters.push_back(a);
    if (!kit->adapters.empty())
        o.extra_adapter_roots.push_back(std::filesystem::path(kit->adapters.front().second).parent_path().string());
    log::info("no model given: serving the demo kit ({})", kit->model_dir);
}

ServerHost::ServerHost(const ServeOptions& o) : m_host(o.host) {
    auto made = api::create_engine(o.engine);
    if (!made.ok()) throw_expected(made.status().code, made.status().message);
    m_engine = std::move(made).value();
    server::ServerOptions so;
    so.host = o.host;
    so.port = o.port;
    so.api_key = o.api_key;
    so.metrics_adapter_window_s = o.metrics_adapter_window_s;
    so.adapter_roots = o.engine.adapter_dirs;
    for (auto& root : o.extra_adapter_roots) so.adapter_roots.push_back(root);
    m_router = std::make_unique<server::Router>(*m_engine, so);
    m_http = std::make_unique<server::HttpServer>(*m_router);
    Status s = m_http->start();
    if (!s.ok()) {
        m_engine->shutdown();
        throw_expected(s.code, s.message);
    }
    log::info("serving {} on {} (OpenAI base URL {}/v1)", m_engine->model().id, address(), address());
}

ServerHost::~ServerHost() { stop(); }

std::string ServerHost::address() const {
    std::string host = m_host.find(':') != std::string::npos ? "[" + m_host + "]" : m_host;
    return "http://" + host + ":" + std::to_string(m_http->port());
}

void ServerHost::stop() {
    if (m_stopped) return;
    m_stopped = true;
    m_router->set_unavailable("the server is shutting down");
    m_http->stop();
    m_engine->shutdown();
}

}  // namespace loradesk::cli
