// Field-by-field validation of OpenAI generation requests (OpenAI + vLLM extension field names).
#include "server/request_parse.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "server/api_error.h"

namespace loradesk::server {

using nlohmann::json;

namespace {

// A field that is absent or null counts as not given (clients send explicit nulls for optional fields).
const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

bool get_bool(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw_invalid(name, fmt::format("'{}' must be a boolean (true or false)", name));
    return v->get<bool>();
}

double get_number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw_invalid(name, fmt::format("'{}' must be a number", name));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw_invalid(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
    return x;
}

int64_t as_integer(const json& v, const std::string& name) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
            throw_invalid(name, fmt::format("'{}' is too large", name));
        return int64_t(v.get<uint64_t>());
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
    }
    throw_invalid(name, fmt::format("'{}' must be an integer", name));
}

std::optional<int64_t> get_int(const json& body, const char* name, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    const int64_t x = as_integer(*v, name);
    if (x < lo || x > hi) throw_invalid(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
    return x;
}

std::vector<int32_t> token_list(const json& v, const std::string& name) {
    if (!v.is_array()) throw_invalid(name, fmt::format("'{}' must be an array of token ids", name));
    std::vector<int32_t> ids;
    ids.reserve(v.size());
    for (const json& t : v) {
        const int64_t id = as_integer(t, name);
        if (id < 0 || id > std::numeric_limits<int32_t>::max())
            throw_invalid(name, fmt::format("'{}' contains the token id {}, which is out of range", name, id));
        ids.push_back(int32_t(id));
    }
    return ids;
}

void parse_stop(const json& body, api::StopParams& stop) {
    if (const json* v = field(body, "stop")) {
        if (v->is_string()) {
            stop.stop.push_back(v->get<std::string>());
        } else if (v->is_array()) {
            for (const json& s : *v) {
                if (!s.is_string()) throw_invalid("stop", "'stop' must be a string or an array of strings");
                stop.stop.push_back(s.get<std::string>());
            }
        } else {
            throw_invalid("stop", "'stop' must be a string or an array of strings");
        }
        for (const std::string& s : stop.stop)
            if (s.empty()) throw_invalid("stop", "'stop' strings must not be empty");
    }
    if (const json* v = field(body, "stop_token_ids")) stop.stop_token_ids = token_list(*v, "stop_token_ids");
    stop.ignore_eos = get_bool(body, "ignore_eos", false);
    stop.include_stop_str_in_output = get_bool(body, "include_stop_str_in_output", false);
}

void parse_sampling(const json& body, api::SamplingParams& s) {
    s.temperature = float(get_number(body, "temperature", 1.0, 0.0, 2.0));
    s.top_p = float(get_number(body, "top_p", 1.0, 0.0, 1.0));
    if (field(body, "top_p") && s.top_p <= 0.0f) throw_invalid("top_p", "'top_p' must be greater than 0 and at most 1");
    s.top_k = int(get_int(body, "top_k", -1, std::numeric_limits<int32_t>::max()).value_or(0));
    if (s.top_k < 0) s.top_k = 0;
    s.min_p = float(get_number(body, "min_p", 0.0, 0.0, 1.0));
    s.presence_penalty = float(get_number(body, "presence_penalty", 0.0, -2.0, 2.0));
    s.frequency_penalty = float(get_number(body, "frequency_penalty", 0.0, -2.0, 2.0));
    s.repetition_penalty = float(get_number(body, "repetition_penalty", 1.0, 0.0, 2.0));
    if (s.repetition_penalty <= 0.0f)
        throw_invalid("repetition_penalty", "'repetition_penalty' must be greater than 0 (1 = off)");
    if (const json* v = field(body, "seed")) s.seed = uint64_t(as_integer(*v, "seed"));
    if (const json* v = field(body, "logit_bias")) {
        if (!v->is_object()) throw_invalid("logit_bias", "'logit_bias' must be an object {\"token_id\": bias}");
        for (const auto& [key, value] : v->items()) {
            int64_t id = -1;
            try {
                std::size_t used = 0;
                id = std::stoll(key, &used);
                if (used != key.size()) id = -1;
            } catch (const std::exception&) {
                id = -1;
            }
            if (id < 0 || id > std::numeric_limits<int32_t>::max())
                throw_invalid("logit_bias", fmt::format("'logit_bias' key '{}' is not a token id", key));
            if (!value.is_number() || value.get<double>() < -100.0 || value.get<double>() > 100.0)
                throw_invalid("logit_bias", fmt::format("'logit_bias' value for token {} must be a number in "
                                                        "[-100, 100]", key));
            s.logit_bias[int32_t(id)] = value.get<float>();
        }
    }
}

// Fields shared by both endpoints; fills the template request and the common flags.
void parse_common(const json& body, const ServerOptions& options, ParsedGeneration& out, api::GenerateRequest& req) {
    if (!body.is_object()) throw_invalid("", "the request body must be a JSON object");
    if (const json* v = field(body, "model")) {
        if (!v->is_string()) throw_invalid("model", "'model' must be a string (a model or adapter id from /v1/models)");
        out.model = v->get<std::string>();
    }
    if (const json* v = field(body, "lora_path")) {
        if (!v->is_string()) throw_invalid("lora_path", "'lora_path' must be a string");
        out.lora_path = resolve_adapter_path(v->get<std::string>(), options.adapter_roots, "lora_path");
    }
    req.model = out.model;
    if (const json* v = field(body, "response_format")) {
        const std::string type = v->is_object() && v->contains("type") && (*v)["type"].is_string()
                                     ? (*v)["type"].get<std::string>()
                                     : std::string();
        if (type != "text")
            throw ApiError(400, "invalid_request_error",
                           fmt::format("response_format '{}' is not supported: loradesk has no constrained decoding; "
                                       "remove response_format or use {{\"type\":\"text\"}}",
                                       type.empty() ? v->dump() : type),
                           "response_format", "unsupported");
    }
    out.n = int(get_int(body, "n", 1, options.max_n).value_or(1));
    out.stream = get_bool(body, "stream", false);
    if (const json* v = field(body, "stream_options")) {
        if (!v->is_object()) throw_invalid("stream_options", "'stream_options' must be an object");
        out.include_usage = out.stream && get_bool(*v, "include_usage", false);
    }
    if (const json* v = field(body, "user"); v && !v->is_string()) throw_invalid("user", "'user' must be a string");
    if (const json* v = field(body, "user")) out.user = v->get<std::string>();
    out.echo = get_bool(body, "echo", false);
    parse_sampling(body, req.sampling);
    parse_stop(body, req.stop);
    int max_tokens = int(get_int(body, "max_tokens", 1, std::numeric_limits<int32_t>::max())
                             .value_or(options.default_max_tokens));
    if (auto v = get_int(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max())) max_tokens = int(*v);
    req.stop.max_tokens = max_tokens;
    req.stop.min_tokens = int(get_int(body, "min_tokens", 0, std::numeric_limits<int32_t>::max()).value_or(0));
    if (req.stop.min_tokens > req.stop.max_tokens)
        throw_invalid("min_tokens", fmt::format("'min_tokens' ({}) must not exceed max_tokens ({})",
                                                req.stop.min_tokens, req.stop.max_tokens));
    req.skip_special_tokens = get_bool(body, "skip_special_tokens", true);
}

std::string message_text(const json& content, std::size_t index) {
    const std::string param = "messages";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array())
        throw_invalid(param, fmt::format("messages[{}].content must be a string or an array of text parts", index));
    std::string text;
    for (const json& part : content) {
        const bool is_text = part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                             part["text"].is_string();
        if (!is_text)
            throw_invalid(param, fmt::format("messages[{}].content has a part that is not text ({}); only text parts "
                                             "are supported by this model",
                                             index, part.is_object() ? part.value("type", "?") : part.type_name()));
        text += part["text"].get<std::string>();
    }
    return text;
}

json normalize_messages(const json& messages) {
    if (!messages.is_array() || messages.empty())
        throw_invalid("messages", "'messages' must be a non-empty array of {role, content} objects");
    json out = json::array();
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            throw_invalid("messages", fmt::format("messages[{}] must be an object with a string 'role'", i));
        json copy = m;
        std::string role = m["role"].get<std::string>();
        if (role == "developer") role = "system";  // OpenAI o-series role; templates know "system"
        if (role != "system" && role != "user" && role != "assistant" && role != "tool")
            throw_invalid("messages", fmt::format("messages[{}].role '{}' is not one of system, developer, user, "
                                                  "assistant, tool", i, role));
        copy["role"] = role;
        auto content = m.find("content");
        const bool has_tool_calls = m.contains("tool_calls") && m["tool_calls"].is_array();
        if (content == m.end() || content->is_null()) {
            if (role != "assistant" || !has_tool_calls)
                throw_invalid("messages", fmt::format("messages[{}] has no content", i));
            copy["content"] = nullptr;
        } else {
            copy["content"] = message_text(*content, i);
        }
        out.push_back(std::move(copy));
    }
    return out;
}

}  // namespace

json parse_json_body(const std::string& body) {
    json parsed = json::parse(body, nullptr, false);
    if (parsed.is_discarded())
        throw_invalid("", "the request body is not valid JSON (send Content-Type: application/json with a JSON object)");
    if (!parsed.is_object()) throw_invalid("", "the request body must be a JSON object");
    return parsed;
}

ParsedGeneration parse_chat_request(const json& body, const ServerOptions& options) {
    ParsedGeneration out;
    out.endpoint = Endpoint::chat;
    api::GenerateRequest req;
    parse_common(body, options, out, req);
    const json* messages = field(body, "messages");
    if (!messages) throw_invalid("messages", "'messages' is required");
    req.messages = normalize_messages(*messages);
    out.logprobs = get_bool(body, "logprobs", false);
    if (auto top = get_int(body, "top_logprobs", 0, 20)) {
        if (!out.logprobs) throw_invalid("top_logprobs", "when using 'top_logprobs', 'logprobs' must be set to true");
        out.top_logprobs = int(*top);
    }
    req.logprobs = out.logprobs ? out.top_logprobs : -1;
    if (const json* v = field(body, "tools")) {
        if (!v->is_array()) throw_invalid("tools", "'tools' must be an array of {type:\"function\", function:{name}}");
        for (const json& t : *v) {
            const bool ok = t.is_object() && t.value("type", "") == "function" && t.contains("function") &&
                            t["function"].is_object() && t["function"].contains("name") &&
                            t["function"]["name"].is_string();
            if (!ok) throw_invalid("tools", "each tool must be {\"type\":\"function\",\"function\":{\"name\":...}}");
        }
        req.tools = *v;
    }
    std::string choice = "auto";
    if (const json* v = field(body, "tool_choice")) {
        if (v->is_string()) {
            choice = v->get<std::string>();
            if (choice != "none" && choice != "auto" && choice != "required")
                throw_invalid("tool_choice", "'tool_choice' must be none, auto, required or {type:function,...}");
        } else if (!(v->is_object() && v->value("type", "") == "function")) {
            throw_invalid("tool_choice", "'tool_choice' must be none, auto, required or {type:function,...}");
        }
    }
    if (choice == "none") req.tools = nullptr;  // the model is not told about tools it may not call
    out.parse_tool_calls = req.tools.is_array() && !req.tools.empty();
    if (const json* v = field(body, "chat_template_kwargs")) {
        if (!v->is_object()) throw_invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        req.chat_template_kwargs = *v;
    }
    req.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
    // vLLM's chat echo: the last message's content is prepended when it has the role being generated.
    const json& last = req.messages->back();
    out.echo_texts.push_back(out.echo && last["role"] == "assistant" && last["content"].is_string()
                                 ? last["content"].get<std::string>()
                                 : std::string());
    out.prompts.push_back(std::move(req));
    if (out.n_choices() > options.max_n)
        throw_invalid("n", fmt::format("at most {} choices per request", options.max_n));
    return out;
}

ParsedGeneration parse_completion_request(const json& body, const ServerOptions& options) {
    ParsedGeneration out;
    out.endpoint = Endpoint::completion;
    api::GenerateRequest req;
    parse_common(body, options, out, req);
    if (auto lp = get_int(body, "logprobs", 0, 5)) {
        out.logprobs = true;
        out.top_logprobs = int(*lp);
    } else if (const json* v = field(body, "logprobs"); v && v->is_boolean()) {
        throw_invalid("logprobs", "'logprobs' must be an integer 0..5 for /v1/completions");
    }
    req.logprobs = out.logprobs ? out.top_logprobs : -1;
    if (field(body, "suffix"))
        throw ApiError(400, "invalid_request_error",
                       "'suffix' is not supported; put fill-in-the-middle tokens into the prompt instead", "suffix",
                       "unsupported");
    const json* prompt = field(body, "prompt");
    if (!prompt) throw_invalid("prompt", "'prompt' is required");
    const char* kForms = "'prompt' must be a string, an array of strings, an array of token ids or an array of arrays "
                         "of token ids";
    auto add_text = [&](std::string text) {
        api::GenerateRequest r = req;
        r.prompt = text;
        out.echo_texts.push_back(std::move(text));
        out.prompts.push_back(std::move(r));
    };
    auto add_ids = [&](const json& ids) {
        api::GenerateRequest r = req;
        r.prompt_ids = token_list(ids, "prompt");
        if (r.prompt_ids.empty()) throw_invalid("prompt", "'prompt' must not be empty");
        out.echo_texts.emplace_back();  // filled by the router via detokenize when echo is set
        out.prompts.push_back(std::move(r));
    };
    if (prompt->is_string()) {
        add_text(prompt->get<std::string>());
    } else if (prompt->is_array() && !prompt->empty()) {
        const json& first = (*prompt)[0];
        if (first.is_number()) {
            add_ids(*prompt);
        } else {
            for (const json& p : *prompt) {
                if (p.is_string()) add_text(p.get<std::string>());
                else if (p.is_array()) add_ids(p);
                else throw_invalid("prompt", kForms);
            }
        }
    } else {
        throw_invalid("prompt", kForms);
    }
    if (out.n_choices() > options.max_n)
        throw_invalid(out.prompts.size() > 1 ? "prompt" : "n",
                      fmt::format("{} prompts x n={} is more than the {} choices allowed per request",
                                  out.prompts.size(), out.n, options.max_n));
    return out;
}

std::string resolve_adapter_path(const std::string& path, const std::vector<std::string>& roots,
                                 const std::string& param) {
    namespace fs = std::filesystem;
    if (roots.empty())
        throw_invalid(param, "loading adapters by path is disabled: start the server with --adapters DIR and put "
                             "the adapter folder inside it");
    std::error_code ec;
    const fs::path canonical = fs::canonical(fs::path(path), ec);
    if (ec) throw_invalid(param, fmt::format("adapter path '{}' does not exist ({})", path, ec.message()));
    for (const std::string& root : roots) {
        const fs::path r = fs::canonical(fs::path(root), ec);
        if (ec) continue;
        auto [root_end, _] = std::mismatch(r.begin(), r.end(), canonical.begin(), canonical.end());
        if (root_end == r.end() && canonical != r) return canonical.string();
    }
    throw_invalid(param, fmt::format("adapter path '{}' is outside the configured adapter folders; copy it into one "
                                     "of them",
                                     path));
}

}  // namespace loradesk::server
