// Router endpoints that are not generation: models, tokenize/detokenize, vLLM adapter load/unload,
// loradesk's adapter list / pin / unpin.
#include <fmt/format.h>

#include <limits>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/openai_format.h"
#include "server/request_parse.h"
#include "server/router.h"

namespace loradesk::server {

namespace {

HttpResponse json_response(const ojson& body) {
    HttpResponse r;
    r.body = dump_json(body);
    return r;
}

// {"object":"list","data":[...]} written entry by entry, as one JSON dump of the whole list would write
// it: with thousands of adapters this avoids building one large JSON tree and regrowing a body of
// several megabytes.
class ListWriter {
  public:
    ListWriter(std::size_t n_items, std::size_t bytes_per_item) {
        m_body.reserve(32 + n_items * bytes_per_item);
        m_body = R"({"object":"list","data":[)";
    }
    void add(const ojson& item) {
        if (m_n++ > 0) m_body += ',';
        m_body += dump_json(item);
    }
    HttpResponse finish() {
        m_body += "]}";
        HttpResponse r;
        r.body = std::move(m_body);
        return r;
    }

  private:
    std::string m_body;
    std::size_t m_n = 0;
};

HttpResponse text_response(std::string text) {
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::move(text);
    return r;
}

ojson adapter_json(const api::AdapterInfo& a) {
    ojson j;
    j["name"] = a.name;
    j["aliases"] = a.aliases;
    j["digest"] = a.digest.empty() ? ojson(nullptr) : ojson(a.digest);  // null while its folder is being read
    j["path"] = a.path;
    j["base_model"] = a.base_model;
    j["rank"] = a.rank;
    j["alpha"] = a.alpha;
    j["rslora"] = a.rslora;
    j["targets"] = a.targets;
    j["size_bytes"] = a.size_bytes;
    j["tier"] = api::tier_name(a.tier);
    j["pinned"] = a.pinned;
    j["compatible"] = a.compatible;
    j["incompatibility"] = a.compatible ? ojson(nullptr) : ojson(a.incompatibility);
    j["running"] = a.running;
    j["waiting"] = a.waiting;
    j["requests_total"] = a.requests_total;
    j["prompt_tokens_total"] = a.prompt_tokens_total;
    j["cached_tokens_total"] = a.cached_tokens_total;
    j["generated_tokens_total"] = a.generated_tokens_total;
    j["last_load_ms"] = a.last_load_ms;
    j["last_used_unix"] = a.last_used_unix;
    j["created_unix"] = a.created_unix;
    return j;
}

// /v1/models entries: the base model (created = now, as vLLM) and an adapter under `id` (its name,
// an alias or BASE:ADAPTER), created when its content was registered or first catalogued.
ojson model_json(const std::string& id, int64_t created, const std::string& owned_by, const std::string& root,
                 const ojson& parent, int max_model_len) {
    ojson m;
    m["id"] = id;
    m["object"] = "model";
    m["created"] = created;
    m["owned_by"] = owned_by;
    m["root"] = root;
    m["parent"] = parent;
    m["max_model_len"] = max_model_len;
    return m;
}

// The base model's entry also says how its weights are quantized (null for an unquantized checkpoint).
ojson base_model_json(const api::ModelInfo& model, const std::string& owned_by) {
    ojson m = model_json(model.id, unix_now(), owned_by, model.path, nullptr, model.max_context);
    if (model.quantization.empty())
        m["quantization"] = nullptr;
    else
        m["quantization"] = ojson{{"method", model.quantization}, {"detail", model.quantization_detail}};
    return m;
}

}  // namespace

HttpResponse Router::list_models() const {
    const api::ModelInfo model = m_engine.model();
    const std::vector<api::AdapterInfo> adapters = m_engine.adapters();
    ListWriter list(adapters.size() + 1, 200);
    list.add(base_model_json(model, m_options.owned_by));
    for (const api::AdapterInfo& a : adapters) {
        if (!a.compatible) continue;  // listed by /v1/adapters with the reason; not servable
        list.add(model_json(a.name, a.created_unix, m_options.owned_by, a.path, model.id, model.max_context));
    }
    return list.finish();
}

HttpResponse Router::get_model(const std::string& id) const {
    const api::ModelInfo model = m_engine.model();
    if (id == model.id) return json_response(base_model_json(model, m_options.owned_by));
    // As generation resolves `model`: a name or alias, else BASE:ADAPTER. Answers under the id asked for.
    auto a = m_engine.adapter(id);
    if (const auto colon = id.find(':'); !a.ok() && colon != std::string::npos) {
        const std::string prefix = id.substr(0, colon);
        if (prefix == model.id || prefix == "base") a = m_engine.adapter(id.substr(colon + 1));
    }
    if (a.ok() && a->compatible)
        return json_response(model_json(id, a->created_unix, m_options.owned_by, a->path, model.id, model.max_context));
    throw ApiError(404, "invalid_request_error",
                   fmt::format("The model `{}` does not exist; GET /v1/models lists the base model and adapters", id),
                   "model", "model_not_found");
}

HttpResponse Router::tokenize(const HttpRequest& request) const {
    require_available();
    const nlohmann::json body = parse_json_body(request.body, {m_options.max_prompt_bytes, 0});
    std::string text;
    bool add_special = true;
    if (body.contains("messages")) {
        const nlohmann::json& messages = body["messages"];
        if (!messages.is_array()) throw_invalid("messages", "'messages' must be an array");
        const nlohmann::json tools = body.contains("tools") ? body["tools"] : nlohmann::json();
        const nlohmann::json kwargs =
            body.contains("chat_template_kwargs") ? body["chat_template_kwargs"] : nlohmann::json();
        auto rendered = m_engine.render_chat(messages, tools, get_bool(body, "add_generation_prompt", true), kwargs);
        if (!rendered.ok()) throw api_error_from_status(rendered.status(), "messages");
        text = rendered.value();
        add_special = false;  // the chat template already emits BOS where the model wants one
    } else {
        text = require_string(body, "prompt");
    }
    add_special = get_bool(body, "add_special_tokens", add_special);
    auto ids = m_engine.tokenize(text, add_special);
    if (!ids.ok()) throw api_error_from_status(ids.status(), "prompt");
    ojson out;
    out["count"] = ids->size();
    out["max_model_len"] = m_engine.model().max_context;
    out["tokens"] = ids.value();
    if (get_bool(body, "return_token_strs", false)) {
        ojson strs = ojson::array();
        for (int32_t id : ids.value()) {
            auto piece = m_engine.detokenize({id}, false);
            strs.push_back(piece.ok() ? piece.value() : std::string());
        }
        out["token_strs"] = std::move(strs);
    }
    return json_response(out);
}

HttpResponse Router::detokenize(const HttpRequest& request) const {
    require_available();
    const nlohmann::json body = parse_json_body(request.body);
    const nlohmann::json* tokens = field(body, "tokens");
    if (!tokens) throw_invalid("tokens", "'tokens' must be an array of token ids");
    const std::vector<int32_t> ids = token_ids(*tokens, "tokens", std::numeric_limits<std::size_t>::max());
    auto text = m_engine.detokenize(ids, get_bool(body, "skip_special_tokens", false));
    if (!text.ok()) throw api_error_from_status(text.status(), "tokens");
    return json_response(ojson{{"prompt", text.value()}});
}

HttpResponse Router::load_lora(const HttpRequest& request) {
    require_available();
    const nlohmann::json body = parse_json_body(request.body);
    const std::string name = require_string(body, "lora_name");
    const std::string path = resolve_adapter_path(require_string(body, "lora_path"), m_options.adapter_roots,
                                                  "lora_path", m_options.hub_cache_dir);
    const Status s = m_engine.load_adapter(name, path);
    if (!s.ok()) throw api_error_from_status(s, s.code == ErrorCode::conflict ? "lora_name" : "lora_path");
    return text_response(fmt::format("Success: LoRA adapter '{}' added successfully", name));
}

HttpResponse Router::unload_lora(const HttpRequest& request) {
    require_available();
    const nlohmann::json body = parse_json_body(request.body);
    const std::string name = require_string(body, "lora_name");
    const Status s = m_engine.unload_adapter(name);
    if (!s.ok()) throw api_error_from_status(s, "lora_name");
    return text_response(fmt::format("Success: LoRA adapter '{}' removed successfully", name));
}

HttpResponse Router::list_adapters() const {
    const std::vector<api::AdapterInfo> adapters = m_engine.adapters();
    ListWriter list(adapters.size(), 700);
    for (const api::AdapterInfo& a : adapters) list.add(adapter_json(a));
    return list.finish();
}

HttpResponse Router::get_adapter(const std::string& name) const {
    auto a = m_engine.adapter(name);
    if (!a.ok()) throw api_error_from_status(a.status(), "name");
    return json_response(adapter_json(a.value()));
}

HttpResponse Router::pin_adapter(const std::string& name, bool pinned) {
    const Status s = m_engine.pin_adapter(name, pinned);
    if (!s.ok()) throw api_error_from_status(s, "name");
    return get_adapter(name);
}

}  // namespace loradesk::server
