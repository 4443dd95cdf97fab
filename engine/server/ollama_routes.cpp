// Ollama's routes over the facade; see ollama_routes.h.
#include "server/ollama_routes.h"

#include <fmt/format.h>

#include <filesystem>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/ollama_stream.h"

namespace loradesk::server {

using nlohmann::json;
using namespace ollama;

namespace {

HttpResponse json_response(const ojson& body) {
    HttpResponse r;
    r.body = dump_json(body);
    return r;
}

std::string modified_at(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_time_type t = fs::last_write_time(path, ec);
    if (ec) return rfc3339(std::chrono::system_clock::now());
    return rfc3339(
        std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(t)));
}

std::string adapter_modified_at(const api::AdapterInfo& a) {
    return a.created_unix > 0 ? rfc3339_unix(a.created_unix) : modified_at(a.path);
}

// Ollama reports keep_alive -1 as an expiry ~292 years ahead (its longest duration); clients show "forever".
std::string far_future() { return rfc3339_unix(unix_now() + int64_t(292) * 365 * 86400); }

ojson model_entry(const std::string& name, const std::string& modified, std::size_t size, const std::string& digest,
                  ojson details) {
    ojson m;
    m["name"] = name;
    m["model"] = name;
    m["modified_at"] = modified;
    m["size"] = size;
    m["digest"] = digest;
    m["details"] = std::move(details);
    return m;
}

[[noreturn]] void not_implemented(const std::string& what) {
    throw ApiError(501, "not_implemented_error", what, {}, "unsupported");
}

// What loradesk does instead of Ollama's model management, one answer per route.
[[noreturn]] void refuse_management(const std::string& path) {
    const std::string load =
        "add an adapter by putting its folder under the server's --adapters DIR, or with POST /v1/load_lora_adapter "
        "{\"lora_name\": NAME, \"lora_path\": FOLDER}";
    if (path == "/api/pull")
        not_implemented(
            "loradesk does not download models: it serves the base model given with --model DIR and "
            "its LoRA adapters; " +
            load);
    if (path == "/api/push") not_implemented("loradesk does not upload models; copy the adapter folder instead");
    if (path == "/api/create" || path.rfind("/api/blobs/", 0) == 0)
        not_implemented("loradesk does not build models from Modelfiles or blobs; " + load);
    if (path == "/api/copy")
        not_implemented(
            "loradesk does not copy models; to serve an adapter under a second name, load its folder "
            "again with POST /v1/load_lora_adapter {\"lora_name\": NEW_NAME, \"lora_path\": FOLDER}");
    if (path == "/api/delete")
        not_implemented(
            "loradesk never deletes model files; stop serving an adapter with POST "
            "/v1/unload_lora_adapter {\"lora_name\": NAME}");
    not_implemented("loradesk generates text only and computes no embeddings; use an embedding server for " + path);
}

}  // namespace

HttpResponse OllamaRoutes::handle(const HttpRequest& q) {
    const std::string& p = q.path;
    const bool get = q.method == "GET" || q.method == "HEAD", post = q.method == "POST";
    if (p == "/api/version") {
        if (get) return version();
    } else if (p == "/api/tags") {
        if (get) return tags();
    } else if (p == "/api/ps") {
        if (get) return ps();
    } else if (p == "/api/show") {
        if (post) return show(q);
    } else if (p == "/api/chat" || p == "/api/generate") {
        if (post) return generate(q, p == "/api/chat");
    } else if (p == "/api/pull" || p == "/api/push" || p == "/api/create" || p == "/api/copy" || p == "/api/delete" ||
               p == "/api/embed" || p == "/api/embeddings" || p.rfind("/api/blobs/", 0) == 0) {
        refuse_management(p);
    } else {
        throw ApiError(404, "not_found_error",
                       fmt::format("no Ollama route {} {}; loradesk serves /api/version, tags, show, ps, chat and "
                                   "generate (see docs/api.md)",
                                   q.method, p),
                       {}, "not_found");
    }
    throw ApiError(405, "invalid_request_error", fmt::format("{} is not allowed on {}", q.method, p), {},
                   "method_not_allowed");
}

HttpResponse OllamaRoutes::version() const { return json_response(ojson{{"version", kApiVersion}}); }

HttpResponse OllamaRoutes::tags() const {
    const api::ModelInfo m = m_engine.model();
    ojson models = ojson::array();
    // loradesk does not hash base weights, so the base model has no digest.
    models.push_back(model_entry(m.id, modified_at(m.path + "/config.json"), m.weight_bytes, "", model_details(m, "")));
    for (const api::AdapterInfo& a : m_engine.adapters()) {
        if (!a.compatible) continue;  // /v1/adapters lists it with the reason; it cannot be served
        models.push_back(model_entry(adapter_model_name(m, a.name), adapter_modified_at(a), a.size_bytes, a.digest,
                                     model_details(m, m.id)));
    }
    return json_response(ojson{{"models", std::move(models)}});
}

HttpResponse OllamaRoutes::ps() const {
    const api::ModelInfo m = m_engine.model();
    const bool gpu = !on_cpu(m);  // the CPU runner's "device slots" are host memory
    ojson models = ojson::array();
    ojson base =
        model_entry(m.id, modified_at(m.path + "/config.json"), m.weight_bytes + m.kv_bytes, "", model_details(m, ""));
    base.erase("modified_at");
    base["expires_at"] = far_future();  // the base model stays loaded while the server runs
    base["size_vram"] = gpu ? m.weight_bytes + m.kv_bytes : 0;
    base["context_length"] = m.max_context;
    models.push_back(std::move(base));
    for (const api::AdapterInfo& a : m_engine.adapters()) {
        if (a.tier != api::Tier::gpu && a.tier != api::Tier::cpu) continue;  // on disk: not loaded
        ojson e = model_entry(adapter_model_name(m, a.name), "", a.size_bytes, a.digest, model_details(m, m.id));
        e.erase("modified_at");
        // loradesk has no unload timers: an unpinned adapter stays resident until its slot is needed by another
        // (least recently used first), so it may go at any moment.
        e["expires_at"] = a.pinned ? far_future() : rfc3339(std::chrono::system_clock::now());
        e["size_vram"] = gpu && a.tier == api::Tier::gpu ? a.size_bytes : 0;
        e["context_length"] = m.max_context;
        models.push_back(std::move(e));
    }
    return json_response(ojson{{"models", std::move(models)}});
}

std::vector<std::string> OllamaRoutes::capabilities() const {
    // The facade does not hand out the template's text, so its features are found by rendering: a template
    // that supports tools writes their names into the prompt, and one that supports thinking renders
    // differently with enable_thinking on and off.
    std::vector<std::string> caps{"completion"};
    const ojson messages = ojson::array({ojson{{"role", "user"}, {"content", "hi"}}});
    const ojson probe = ojson::parse(R"([{"type":"function","function":{"name":"loradesk_probe_tool",)"
                                     R"("description":"probe","parameters":{"type":"object","properties":{}}}}])");
    auto with_tools = m_engine.render_chat(messages, probe, true, nullptr);
    if (with_tools.ok() && with_tools->find("loradesk_probe_tool") != std::string::npos) caps.push_back("tools");
    auto on = m_engine.render_chat(messages, nullptr, true, ojson{{"enable_thinking", true}});
    auto off = m_engine.render_chat(messages, nullptr, true, ojson{{"enable_thinking", false}});
    if (on.ok() && off.ok() && on.value() != off.value()) caps.push_back("thinking");
    return caps;
}

HttpResponse OllamaRoutes::show(const HttpRequest& request) const {
    const json body = parse_json_body(request.body);
    // `name` is the field's old spelling, which older clients still send.
    const std::string name =
        body.contains("model") || !body.contains("name") ? require_string(body, "model") : require_string(body, "name");
    const std::string adapter = resolve(name);
    const api::ModelInfo m = m_engine.model();
    const std::string family = family_of(m.architecture);
    ojson info;
    info["general.architecture"] = family;
    info["general.basename"] = m.id;
    info["general.parameter_count"] = m.parameters;
    info[family + ".context_length"] = m.max_context;
    info[family + ".vocab_size"] = m.vocab_size;
    std::string modelfile = fmt::format("# served by loradesk\nFROM {}\n", m.path);
    std::string modified = modified_at(m.path + "/config.json");
    if (!adapter.empty()) {
        auto a = m_engine.adapter(adapter);
        if (!a.ok()) throw api_error_from_status(a.status(), "model");
        modelfile += fmt::format("ADAPTER {}\n", a->path);
        modified = adapter_modified_at(a.value());
        info["adapter.name"] = a->name;
        info["adapter.digest"] = a->digest;
        info["adapter.base_model"] = a->base_model;
        info["adapter.rank"] = a->rank;
        info["adapter.alpha"] = a->alpha;
        info["adapter.rslora"] = a->rslora;
        info["adapter.target_modules"] = a->targets;
        info["adapter.size_bytes"] = a->size_bytes;
        info["adapter.tier"] = api::tier_name(a->tier);
        info["adapter.pinned"] = a->pinned;
    }
    const std::string parameters = fmt::format("num_ctx {}", m.max_context);
    ojson out;
    out["license"] = "";
    out["modelfile"] = modelfile + "PARAMETER " + parameters + "\n";
    out["parameters"] = parameters;
    // Ollama's templates are Go templates; loradesk renders the model's Jinja template, which is not one.
    out["template"] = "";
    out["details"] = model_details(m, adapter.empty() ? "" : m.id);
    out["model_info"] = std::move(info);
    out["capabilities"] = capabilities();
    out["modified_at"] = modified;
    return json_response(out);
}

std::string OllamaRoutes::resolve(const std::string& name) const {
    const api::ModelInfo m = m_engine.model();
    // Ollama's clients add the default tag ":latest" to names without one.
    if (name == m.id || name == m.id + ":latest" || name == "base") return "";
    const auto lookup = [&](const std::string& n) {
        auto a = m_engine.adapter(n);
        if (const auto colon = n.find(':'); !a.ok() && colon != std::string::npos) {
            const std::string prefix = n.substr(0, colon);
            if (prefix == m.id || prefix == "base") a = m_engine.adapter(n.substr(colon + 1));
        }
        return a;
    };
    auto a = lookup(name);
    if (!a.ok() && name.size() > 7 && name.compare(name.size() - 7, 7, ":latest") == 0)
        a = lookup(name.substr(0, name.size() - 7));
    if (a.ok() && !a->compatible)
        throw ApiError(404, "not_found_error",
                       fmt::format("model \"{}\" cannot be served: {}", name, a->incompatibility), "model",
                       "model_not_found");
    if (a.ok()) return a->name;
    throw ApiError(404, "not_found_error",
                   fmt::format("model \"{}\" not found: loradesk serves the base model \"{}\" and its LoRA adapters "
                               "(GET /api/tags lists them); to add an adapter, put its folder under the server's "
                               "--adapters DIR or load it with POST /v1/load_lora_adapter {{\"lora_name\": NAME, "
                               "\"lora_path\": FOLDER}}",
                               name, m.id),
                   "model", "model_not_found");
}

void OllamaRoutes::apply_keep_alive(const std::string& adapter, const KeepAliveSpec& keep_alive) {
    if (adapter.empty()) return;
    // Only an explicit forever or 0 changes anything: every client sends its default ("5m") with each request,
    // and that must not undo a pin set by the adapter's owner. loradesk has no unload timers.
    if (keep_alive.kind != KeepAlive::keep_loaded && keep_alive.kind != KeepAlive::unload) return;
    const Status s = m_engine.pin_adapter(adapter, keep_alive.kind == KeepAlive::keep_loaded);
    if (!s.ok()) throw api_error_from_status(s, "model");
}

HttpResponse OllamaRoutes::load_answer(const OllamaRequest& request, const std::string& adapter) const {
    ojson body;
    body["model"] = request.model;
    body["created_at"] = rfc3339(std::chrono::system_clock::now());
    if (request.chat)
        body["message"] = ojson{{"role", "assistant"}, {"content", ""}};
    else
        body["response"] = "";
    body["done"] = true;
    // Unloading applies to adapters; the base model stays loaded while the server runs.
    body["done_reason"] = request.keep_alive.kind == KeepAlive::unload && !adapter.empty() ? "unload" : "load";
    return json_response(body);
}

HttpResponse OllamaRoutes::generate(const HttpRequest& request, bool chat) {
    const auto started = std::chrono::steady_clock::now();
    const json body = parse_json_body(request.body, {m_options.max_prompt_bytes, 0});  // one prompt per request
    OllamaRequest req = chat ? parse_chat(body, m_options) : parse_generate(body, m_options);
    const std::string adapter = resolve(req.model);
    if (req.load_only) {
        apply_keep_alive(adapter, req.keep_alive);
        return load_answer(req, adapter);
    }
    for (api::GenerateRequest& p : req.parsed.prompts) p.model = adapter.empty() ? m_engine.model().id : adapter;
    req.parsed.model = req.model;
    auto o = std::make_shared<OllamaJob>();
    o->chat = chat;
    o->logprobs = req.logprobs;
    o->model = req.model;
    o->times.started = started;
    o->job = start_job(m_engine, std::move(req.parsed), m_options, m_metrics, request.client_gone,
                       chat ? "ollama_chat" : "ollama_generate", "ollama-");
    // After submission: the request holds the adapter, so unpinning it now cannot evict it mid-request.
    apply_keep_alive(adapter, req.keep_alive);
    if (!req.stream) return collect(*o);
    HttpResponse r;
    make_ndjson_producer(o, r);
    return r;
}

}  // namespace loradesk::server
