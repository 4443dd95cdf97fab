// Ollama's API under /api/ over the engine facade: version, tags, show, ps, chat and generate (NDJSON streams),
// and clear refusals of what loradesk does not do (pull, push, create, copy, delete, embeddings, blobs). The base
// model is listed under its id and each adapter as BASE:ADAPTER. Handlers throw ApiError; the router writes it in
// Ollama's {"error": "..."} shape. Thread-safe: the facade is, and nothing here is mutable.
#pragma once

#include <string>

#include "api/engine.h"
#include "server/http_types.h"
#include "server/ollama_parse.h"
#include "server/server_metrics.h"
#include "server/server_options.h"

namespace loradesk::server {

class OllamaRoutes {
  public:
    // `options` and `metrics` are the router's and must outlive this.
    OllamaRoutes(api::Engine& engine, const ServerOptions& options, ServerMetrics& metrics)
        : m_engine(engine), m_options(options), m_metrics(metrics) {}

    static bool owns(const std::string& path) { return path.rfind("/api/", 0) == 0; }
    static bool generates(const std::string& path) { return path == "/api/chat" || path == "/api/generate"; }

    HttpResponse handle(const HttpRequest& request);

  private:
    HttpResponse version() const;
    HttpResponse tags() const;
    HttpResponse show(const HttpRequest& request) const;
    HttpResponse ps() const;
    HttpResponse generate(const HttpRequest& request, bool chat);
    HttpResponse load_answer(const ollama::OllamaRequest& request, const std::string& adapter) const;

    // The adapter an Ollama model name selects ("" for the base model), or a 404 in Ollama's words.
    std::string resolve(const std::string& name) const;
    // keep_alive on an adapter: forever pins it, 0 unpins it; the base model always stays loaded.
    void apply_keep_alive(const std::string& adapter, const ollama::KeepAliveSpec& keep_alive);
    std::vector<std::string> capabilities() const;

    api::Engine& m_engine;
    const ServerOptions& m_options;
    ServerMetrics& m_metrics;
};

}  // namespace loradesk::server
