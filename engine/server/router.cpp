// Route dispatch, API key, CORS, body limit, health and generation entry points; see router.h.
#include "server/router.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/log.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/json_fields.h"
#include "server/ollama_format.h"
#include "server/openai_format.h"
#include "server/output_constraint.h"
#include "server/request_parse.h"

namespace loradesk::server {

namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Comparison whose time does not depend on where the strings differ.
bool constant_time_equal(const std::string& given, const std::string& expected) {
    if (expected.empty()) return false;
    std::size_t diff = given.size() ^ expected.size();
    for (std::size_t i = 0; i < expected.size(); ++i)
        diff |= std::size_t((i < given.size() ? (unsigned char)given[i] : 0u) ^ (unsigned char)expected[i]);
    return diff == 0;
}

}  // namespace

Router::Router(api::Engine& engine, ServerOptions options) : m_engine(engine), m_options(std::move(options)) {
    m_metrics.set_adapter_window(std::chrono::seconds(std::max(0, m_options.metrics_adapter_window_s)));
    if (m_options.max_prompt_bytes == 0)
        m_options.max_prompt_bytes = std::size_t(std::max(1, m_engine.model().max_context)) * kPromptBytesPerToken;
    // The template does not change while the engine runs, so its markers are read once.
    const std::string chat_template = m_engine.model().chat_template;
    if (!is_tool_call_parser_name(m_options.tool_call_parser)) {
        log::warn("unknown tool-call parser '{}' (valid: {}); reading the chat template instead",
                  m_options.tool_call_parser, kToolCallParserNames);
        m_options.tool_call_parser = "auto";
    }
    m_options.tool_call_format = choose_tool_call_format(m_options.tool_call_parser, chat_template);
    m_options.template_reasoning = template_reasoning(chat_template);
    if (!chat_template.empty())
        log::info("chat replies: {} tool calls{}", tool_call_format_name(m_options.tool_call_format),
                  m_options.template_reasoning == TemplateReasoning::think ? ", <think> reasoning" : "");
}

void Router::set_unavailable(std::string reason) {
    std::lock_guard lock(m_state_mutex);
    m_unavailable = reason.empty() ? "unavailable" : std::move(reason);
}

void Router::set_available() {
    std::lock_guard lock(m_state_mutex);
    m_unavailable.clear();
}

void Router::require_available() const {
    std::lock_guard lock(m_state_mutex);
    if (m_unavailable.empty()) return;
    ApiError e(503, "unavailable_error", m_unavailable + "; retry shortly");
    e.retry_after_s = m_options.retry_after_s;
    throw e;
}

bool Router::origin_allowed(const std::string& origin) const {
    for (const std::string& pattern : m_options.cors_origins) {
        if (pattern == "*" || pattern == origin) return true;
        if (ends_with(pattern, ":*")) {
            const std::string host = pattern.substr(0, pattern.size() - 1);  // "http://localhost:"
            if (starts_with(origin, host) && origin.size() > host.size() &&
                origin.find_first_not_of("0123456789", host.size()) == std::string::npos)
                return true;
        }
    }
    return false;
}

bool Router::host_allowed(const std::string& host_header) const {
    // A web page on another site can resolve its own name to 127.0.0.1 (DNS rebinding) and then talk to a
    // keyless loopback server as "same origin"; its requests still carry the foreign Host name.
    const std::string& bind = m_options.host;
    if (!m_options.api_key.empty() || !is_loopback_host(bind) || host_header.empty()) return true;
    std::string name = host_header;
    if (!name.empty() && name[0] == '[')
        name = name.substr(0, name.find(']') + 1);
    else
        name = name.substr(0, name.find(':'));
    name = to_lower(name);
    if (name == "localhost" || name == "127.0.0.1" || name == "[::1]" || name == bind) return true;
    for (const std::string& h : m_options.allowed_hosts)
        if (to_lower(h) == name) return true;
    return false;
}

bool Router::authorized(const HttpRequest& request) const {
    if (m_options.api_key.empty()) return true;  // local use: any key (or none) is fine
    std::string key = request.header("authorization");
    if (starts_with(key, "Bearer ") || starts_with(key, "bearer "))
        key = key.substr(7);
    else
        key.clear();
    if (key.empty()) key = request.header("x-api-key");
    if (key.empty()) key = request.header("api-key");
    return constant_time_equal(key, m_options.api_key);
}

HttpResponse Router::preflight(const HttpRequest& request) const {
    HttpResponse r;
    r.status = 204;
    r.content_type.clear();
    r.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string requested = request.header("access-control-request-headers");
    r.set_header("Access-Control-Allow-Headers", requested.empty() ? "authorization, content-type" : requested);
    r.set_header("Access-Control-Max-Age", "86400");
    return r;
}

HttpResponse Router::handle(const HttpRequest& request) {
    const std::string origin = request.header("origin");
    const bool cross_origin = !origin.empty();
    HttpResponse r;
    try {
        if (cross_origin && !origin_allowed(origin))
            throw ApiError(
                403, "permission_error",
                fmt::format("browser origin '{}' is not allowed; add it to the server's CORS origins", origin), {},
                "origin_not_allowed");
        if (!host_allowed(request.header("host")))
            throw ApiError(403, "permission_error",
                           fmt::format("Host '{}' is not allowed on this loopback server (DNS rebinding protection); "
                                       "use http://127.0.0.1:{} or configure an API key",
                                       request.header("host"), m_options.port),
                           {}, "host_not_allowed");
        if (request.method == "OPTIONS") {
            r = preflight(request);
        } else {
            if (request.body.size() > m_options.max_body_bytes)
                throw ApiError(413, "invalid_request_error",
                               fmt::format("the request body has {} bytes, more than the limit of {}; send less",
                                           request.body.size(), m_options.max_body_bytes),
                               {}, "request_too_large");
            if (request.path != "/health" && request.path != "/v1/health" && !authorized(request))
                throw ApiError(401, "authentication_error",
                               "invalid or missing API key: send 'Authorization: Bearer <key>' with the key the server "
                               "was started with",
                               {}, "invalid_api_key");
            r = dispatch(request);
        }
    } catch (const ApiError& e) {
        r = OllamaRoutes::owns(request.path) ? ollama::error_response(e) : error_response(e);
    } catch (const std::exception& e) {
        log::error("server: {} {} failed: {}", request.method, request.path, e.what());
        const ApiError internal(500, "server_error", fmt::format("internal error: {}", e.what()));
        r = OllamaRoutes::owns(request.path) ? ollama::error_response(internal) : error_response(internal);
    }
    if (cross_origin && origin_allowed(origin)) {
        r.set_header("Access-Control-Allow-Origin", origin);
        r.set_header("Vary", "Origin");
    }
    return r;
}

HttpResponse Router::dispatch(const HttpRequest& q) {
    const std::string& p = q.path;
    const bool get = q.method == "GET", post = q.method == "POST";
    if (OllamaRoutes::owns(p)) {
        if (OllamaRoutes::generates(p)) require_available();
        return m_ollama.handle(q);
    } else if (p == "/health" || p == "/v1/health") {
        if (get) return health();
    } else if (p == "/metrics") {
        if (get) {
            HttpResponse r;
            r.content_type = "text/plain; version=0.0.4; charset=utf-8";
            r.body = m_metrics.render(m_engine);
            return r;
        }
    } else if (p == "/v1/models" || p == "/models") {
        if (get) return list_models();
    } else if (starts_with(p, "/v1/models/") || starts_with(p, "/models/")) {
        if (get) return get_model(p.substr(p.find("/models/") + 8));
    } else if (p == "/v1/chat/completions" || p == "/chat/completions") {
        if (post) return generate(q, true);
    } else if (p == "/v1/completions" || p == "/completions") {
        if (post) return generate(q, false);
    } else if (p == "/tokenize" || p == "/v1/tokenize") {
        if (post) return tokenize(q);
    } else if (p == "/detokenize" || p == "/v1/detokenize") {
        if (post) return detokenize(q);
    } else if (p == "/v1/load_lora_adapter") {
        if (post) return load_lora(q);
    } else if (p == "/v1/unload_lora_adapter") {
        if (post) return unload_lora(q);
    } else if (p == "/v1/adapters") {
        if (get) return list_adapters();
    } else if (starts_with(p, "/v1/adapters/")) {
        const std::string rest = p.substr(13);
        if (post && ends_with(rest, "/pin")) return pin_adapter(rest.substr(0, rest.size() - 4), true);
        if (post && ends_with(rest, "/unpin")) return pin_adapter(rest.substr(0, rest.size() - 6), false);
        if (get && rest.find('/') == std::string::npos) return get_adapter(rest);
    } else {
        throw ApiError(404, "not_found_error", fmt::format("no route for {} {}; see docs/api.md", q.method, p), {},
                       "not_found");
    }
    throw ApiError(405, "invalid_request_error", fmt::format("{} is not allowed on {}", q.method, p), {},
                   "method_not_allowed");
}

HttpResponse Router::health() const {
    std::lock_guard lock(m_state_mutex);
    if (!m_unavailable.empty()) {
        ApiError e(503, "unavailable_error", m_unavailable);
        e.retry_after_s = m_options.retry_after_s;
        return error_response(e);
    }
    HttpResponse r;
    r.body = R"({"status":"ok"})";
    return r;
}

HttpResponse Router::generate(const HttpRequest& request, bool chat) {
    require_available();
    const nlohmann::json body =
        parse_json_body(request.body, {m_options.max_prompt_bytes, std::size_t(std::max(1, m_options.max_n))});
    // Schemas and tools are read again in the client's key order; only bodies that may carry them pay for it.
    nlohmann::ordered_json ordered;
    for (std::string_view name : kOrderedFields)
        if (ordered.is_null() && request.body.find(fmt::format("\"{}\"", name)) != std::string::npos)
            ordered = parse_ordered_fields(request.body, kOrderedFields);
    const nlohmann::ordered_json* fields = ordered.is_null() ? nullptr : &ordered;
    ParsedGeneration parsed =
        chat ? parse_chat_request(body, m_options, fields) : parse_completion_request(body, m_options, fields);
    return run_generation(m_engine, std::move(parsed), m_options, m_metrics, request.client_gone);
}

}  // namespace loradesk::server
