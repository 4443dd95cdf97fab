// The HTTP routes of loradesk over our own request/response types: OpenAI endpoints (with and without /v1),
// health, metrics, tokenize/detokenize, vLLM-style adapter load/unload and loradesk's adapter admin routes,
// Ollama's API under /api/ (ollama_routes.h), plus API-key checks, CORS and the body-size limit. Thread-safe: handle()
// runs on many worker threads.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "api/engine.h"
#include "server/http_types.h"
#include "server/ollama_routes.h"
#include "server/server_metrics.h"
#include "server/server_options.h"

namespace loradesk::server {

class Router {
  public:
    Router(api::Engine& engine, ServerOptions options);

    // Never throws: every failure becomes an OpenAI error response.
    HttpResponse handle(const HttpRequest& request);

    // While unavailable, /health answers 503 with the reason and generation routes 503 + Retry-After.
    void set_unavailable(std::string reason);
    void set_available();

    const ServerOptions& options() const { return m_options; }
    ServerMetrics& metrics() { return m_metrics; }

    // CORS: whether a browser Origin is on the allow-list (exact, "scheme://host:*" or "*").
    bool origin_allowed(const std::string& origin) const;

  private:
    HttpResponse dispatch(const HttpRequest& request);
    HttpResponse preflight(const HttpRequest& request) const;
    bool authorized(const HttpRequest& request) const;
    bool host_allowed(const std::string& host_header) const;
    void require_available() const;

    HttpResponse health() const;
    HttpResponse generate(const HttpRequest& request, bool chat);
    HttpResponse list_models() const;
    HttpResponse get_model(const std::string& id) const;
    HttpResponse tokenize(const HttpRequest& request) const;
    HttpResponse detokenize(const HttpRequest& request) const;
    HttpResponse load_lora(const HttpRequest& request);
    HttpResponse unload_lora(const HttpRequest& request);
    HttpResponse list_adapters() const;
    HttpResponse get_adapter(const std::string& name) const;
    HttpResponse pin_adapter(const std::string& name, bool pinned);

    api::Engine& m_engine;
    ServerOptions m_options;
    ServerMetrics m_metrics;
    mutable std::mutex m_state_mutex;
    std::string m_unavailable;  // reason; empty = available
    OllamaRoutes m_ollama{m_engine, m_options, m_metrics};
};

}  // namespace loradesk::server
