// Field-by-field validation of OpenAI generation requests (OpenAI + vLLM extension field names).
#include "server/request_parse.h"

#include <fmt/format.h>

#include <filesystem>
#include <limits>

#include "core/error.h"
#include "hub/hf_cache.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/output_constraint.h"
#include "server/sampling_parse.h"
#include "server/tool_call_grammar.h"

namespace loradesk::server {

using nlohmann::json;

namespace {

// An object's "type" when it is a string, else "": json::value("type", "") throws (a 500) when the key holds
// another type, as fuzz_request_parse found with {"type": {"url": ...}} and {"type": 2^63}.
std::string type_of(const json& v) {
    if (!v.is_object()) return {};
    auto it = v.find("type");
    return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Refuses a prompt that cannot fit the context before it is tokenized (30 MB took 12 s to tokenize only to be
// refused as too long): no token is longer than kPromptBytesPerToken bytes in practice.
void check_prompt_bytes(std::size_t bytes, const ServerOptions& options, const std::string& param) {
    if (options.max_prompt_bytes == 0 || bytes <= options.max_prompt_bytes) return;
    throw api_error_from_status(
        Status::failure(ErrorCode::context_too_long,
                        fmt::format("your prompt has {} bytes, more than any prompt that fits ({} bytes, {} per token "
                                    "of context).",
                                    bytes, options.max_prompt_bytes, kPromptBytesPerToken)),
        param);
}

// Fields shared by both endpoints; fills the template request and the common flags.
void parse_common(const json& body, const nlohmann::ordered_json& ordered, const ServerOptions& options,
                  ParsedGeneration& out, api::GenerateRequest& req) {
    if (!body.is_object()) throw_invalid("", "the request body must be a JSON object");
    if (const json* v = field(body, "model")) {
        if (!v->is_string()) throw_invalid("model", "'model' must be a string (a model or adapter id from /v1/models)");
        out.model = v->get<std::string>();
    }
    if (const json* v = field(body, "lora_path")) {
        if (!v->is_string()) throw_invalid("lora_path", "'lora_path' must be a string");
        out.lora_path =
            resolve_adapter_path(v->get<std::string>(), options.adapter_roots, "lora_path", options.hub_cache_dir);
        out.lora_name = adapter_name_for(v->get<std::string>(), out.lora_path);
    }
    req.model = out.model;
    req.grammar = output_constraint_grammar(ordered);
    out.n = int(get_int(body, "n", 1, options.max_n).value_or(1));
    out.best_of = out.n;
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
    // 0 is accepted here and refused by finish_scoring unless the request scores its prompt.
    auto given = get_int(body, "max_tokens", 0, std::numeric_limits<int32_t>::max());
    if (auto v = get_int(body, "max_completion_tokens", 0, std::numeric_limits<int32_t>::max())) given = v;
    req.stop.max_tokens = given ? int(*given) : options.default_max_tokens;
    // Asked for explicitly, a completion that cannot fit the context is an error (OpenAI, vLLM); the default
    // is clipped to what the context leaves.
    req.stop.strict_max_tokens = given.has_value();
    if (auto v = get_int(body, "prompt_logprobs", 0, 20)) out.prompt_logprobs = int(*v);
    req.stop.min_tokens = int(get_int(body, "min_tokens", 0, std::numeric_limits<int32_t>::max()).value_or(0));
    if (req.stop.min_tokens > req.stop.max_tokens)
        throw_invalid("min_tokens", fmt::format("'min_tokens' ({}) must not exceed max_tokens ({})",
                                                req.stop.min_tokens, req.stop.max_tokens));
    req.skip_special_tokens = get_bool(body, "skip_special_tokens", true);
}

// Prompt scoring and max_tokens 0, once the endpoint's logprobs fields are known.
void finish_scoring(ParsedGeneration& out, api::GenerateRequest& req) {
    if (out.echo_logprobs) req.prompt_logprobs = out.top_logprobs;
    if (out.prompt_logprobs >= 0) req.prompt_logprobs = std::max(req.prompt_logprobs, out.prompt_logprobs);
    if (req.stop.max_tokens > 0) return;
    if (out.endpoint == Endpoint::completion && out.echo) {
        // Only the echoed prompt is returned; the engine scores it (so it can stop without a token).
        req.prompt_logprobs = std::max(req.prompt_logprobs, 0);
        return;
    }
    if (out.prompt_logprobs >= 0) return;
    throw_invalid("max_tokens",
                  "'max_tokens' must be at least 1; 0 is allowed only to score the prompt without generating "
                  "(completions with \"echo\": true, or with \"prompt_logprobs\")");
}

std::string message_text(const json& content, std::size_t index) {
    const std::string param = "messages";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array())
        throw_invalid(param, fmt::format("messages[{}].content must be a string or an array of text parts", index));
    std::string text;
    for (const json& part : content) {
        const bool is_text = type_of(part) == "text" && part.contains("text") && part["text"].is_string();
        if (!is_text)
            throw_invalid(param, fmt::format("messages[{}].content has a part that is not text ({}); only text parts "
                                             "are supported by this model",
                                             index, part.is_object() ? type_of(part) : std::string(part.type_name())));
        // Parts join with a newline, as vLLM and transformers join them (and as /tokenize always did).
        if (&part != &content.front()) text += '\n';
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
                                                  "assistant, tool",
                                                  i, role));
        copy["role"] = role;
        auto content = m.find("content");
        const bool has_tool_calls = m.contains("tool_calls") && m["tool_calls"].is_array();
        if (content == m.end() || content->is_null()) {
            if (role != "assistant" || !has_tool_calls)
                throw_invalid("messages", fmt::format("messages[{}] has no content", i));
            // An empty string, as vLLM hands it on: templates that concatenate or test `content is string`
            // (the demo kit's among them) fail on null, and every agent's turn after a tool call has one.
            copy["content"] = "";
        } else {
            copy["content"] = message_text(*content, i);
        }
        out.push_back(std::move(copy));
    }
    return out;
}

}  // namespace

ParsedGeneration parse_chat_request(const json& body, const ServerOptions& options,
                                    const nlohmann::ordered_json* ordered_fields) {
    ParsedGeneration out;
    out.endpoint = Endpoint::chat;
    api::GenerateRequest req;
    const nlohmann::ordered_json ordered = ordered_fields ? *ordered_fields : ordered_fields_of(body);
    parse_common(body, ordered, options, out, req);
    const json* messages = field(body, "messages");
    if (!messages) throw_invalid("messages", "'messages' is required");
    req.messages = normalize_messages(*messages);
    std::size_t text_bytes = 0;
    for (const auto& m : *req.messages)
        if (m["content"].is_string()) text_bytes += m["content"].get_ref<const std::string&>().size();
    check_prompt_bytes(text_bytes, options, "messages");
    out.logprobs = get_bool(body, "logprobs", false);
    if (auto top = get_int(body, "top_logprobs", 0, 20)) {
        if (!out.logprobs) throw_invalid("top_logprobs", "when using 'top_logprobs', 'logprobs' must be set to true");
        out.top_logprobs = int(*top);
    }
    req.logprobs = out.logprobs ? out.top_logprobs : -1;
    finish_scoring(out, req);
    if (const json* v = field(body, "tools")) {
        if (!v->is_array()) throw_invalid("tools", "'tools' must be an array of {type:\"function\", function:{name}}");
        for (const json& t : *v) {
            const bool ok = type_of(t) == "function" && t.contains("function") && t["function"].is_object() &&
                            t["function"].contains("name") && t["function"]["name"].is_string();
            if (!ok) throw_invalid("tools", "each tool must be {\"type\":\"function\",\"function\":{\"name\":...}}");
        }
        req.tools = ordered.at("tools");  // the client's key order: templates render tools with tojson
    }
    std::string choice = "auto";
    ToolChoiceGrammar forced;
    if (const json* v = field(body, "tool_choice")) {
        if (v->is_string()) {
            choice = v->get<std::string>();
            if (choice != "none" && choice != "auto" && choice != "required")
                throw_invalid("tool_choice", "'tool_choice' must be none, auto, required or {type:function,...}");
        } else if (type_of(*v) != "function" || !v->contains("function") || !(*v)["function"].is_object() ||
                   !(*v)["function"].contains("name") || !(*v)["function"]["name"].is_string()) {
            throw_invalid("tool_choice",
                          "'tool_choice' must be none, auto, required or "
                          "{\"type\":\"function\",\"function\":{\"name\":...}}");
        } else {
            choice = "function";
            forced.only = (*v)["function"]["name"].get<std::string>();
        }
    }
    if (choice == "none") req.tools = nullptr;  // the model is not told about tools it may not call
    out.parse_tool_calls = req.tools.is_array() && !req.tools.empty();
    if (choice == "required" || choice == "function") {
        // Enforced: the reply is tool calls in the model family's own syntax, arguments per each tool's schema.
        if (!out.parse_tool_calls)
            throw_invalid("tool_choice", fmt::format("tool_choice '{}' needs a non-empty 'tools' list", choice));
        forced.parallel = get_bool(body, "parallel_tool_calls", true);
        req.grammar = tool_call_grammar(tool_call_syntax(options.tool_call_format), req.tools, forced);
    }
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

ParsedGeneration parse_completion_request(const json& body, const ServerOptions& options,
                                          const nlohmann::ordered_json* ordered_fields) {
    ParsedGeneration out;
    out.endpoint = Endpoint::completion;
    api::GenerateRequest req;
    const nlohmann::ordered_json ordered = ordered_fields ? *ordered_fields : ordered_fields_of(body);
    parse_common(body, ordered, options, out, req);
    if (auto lp = get_int(body, "logprobs", 0, 5)) {
        out.logprobs = true;
        out.top_logprobs = int(*lp);
    } else if (const json* v = field(body, "logprobs"); v && v->is_boolean()) {
        throw_invalid("logprobs", "'logprobs' must be an integer 0..5 for /v1/completions");
    }
    req.logprobs = out.logprobs ? out.top_logprobs : -1;
    out.echo_logprobs = out.echo && out.logprobs;
    finish_scoring(out, req);
    if (auto b = get_int(body, "best_of", 1, options.max_n)) {
        if (*b < out.n) throw_invalid("best_of", fmt::format("'best_of' ({}) must be at least n ({})", *b, out.n));
        out.best_of = int(*b);
    }
    if (out.best_of > out.n) {
        if (out.stream)
            throw_invalid("best_of", "'best_of' greater than n cannot be streamed; remove 'stream' or 'best_of'");
        // The candidates are ranked by their cumulative logprob, which the engine reports per token.
        req.logprobs = std::max(req.logprobs, 0);
    }
    if (field(body, "suffix"))
        throw ApiError(400, "invalid_request_error",
                       "'suffix' is not supported; put fill-in-the-middle tokens into the prompt instead", "suffix",
                       "unsupported");
    const json* prompt = field(body, "prompt");
    if (!prompt) throw_invalid("prompt", "'prompt' is required");
    const char* kForms =
        "'prompt' must be a string, an array of strings, an array of token ids or an array of arrays "
        "of token ids";
    // The prompts, counted and checked before any is copied: each becomes a request of its own, n times over.
    std::vector<const json*> items;
    if (prompt->is_string() || (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number())) {
        items.push_back(prompt);
    } else if (prompt->is_array() && !prompt->empty()) {
        for (const json& p : *prompt) items.push_back(&p);
    } else {
        throw_invalid("prompt", kForms);
    }
    if (items.size() * std::size_t(out.best_of) > std::size_t(options.max_n))
        throw_invalid(items.size() > 1 ? "prompt" : (out.best_of > out.n ? "best_of" : "n"),
                      fmt::format("{} prompts x {}={} is more than the {} choices allowed per request", items.size(),
                                  out.best_of > out.n ? "best_of" : "n", out.best_of, options.max_n));
    for (const json* p : items) {
        if (!p->is_string() && !p->is_array()) throw_invalid("prompt", kForms);
        if (p->is_string()) check_prompt_bytes(p->get_ref<const std::string&>().size(), options, "prompt");
    }
    for (const json* p : items) {
        api::GenerateRequest r = req;
        if (p->is_string()) {
            r.prompt = p->get<std::string>();
            out.echo_texts.push_back(*r.prompt);
        } else {
            r.prompt_ids = token_ids(*p, "prompt", std::numeric_limits<std::size_t>::max());
            if (r.prompt_ids.empty()) throw_invalid("prompt", "'prompt' must not be empty");
            out.echo_texts.emplace_back();  // filled by the router via detokenize when echo is set
        }
        out.prompts.push_back(std::move(r));
    }
    return out;
}

std::string adapter_name_for(const std::string& reference, const std::string& resolved) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(reference, ec))
        if (const auto id = hub::parse_hub_id(reference)) return id->repo.substr(id->repo.find('/') + 1);
    return fs::path(resolved).filename().string();
}

std::string resolve_adapter_path(const std::string& path, const std::vector<std::string>& roots,
                                 const std::string& param, const std::string& hub_cache_dir) {
    namespace fs = std::filesystem;
    std::error_code exists_ec;
    if (!hub_cache_dir.empty() && !fs::exists(path, exists_ec)) {
        if (const auto id = hub::parse_hub_id(path)) {
            // A Hub id reads only the snapshot of the Hugging Face cache, which resolve_snapshot confines; the
            // server never downloads (that would block a worker for minutes): `loradeskd pull ID --adapter` does.
            try {
                return hub::resolve_snapshot(hub_cache_dir, *id, hub::RepoContent::adapter).path;
            } catch (const ExpectedError& e) {
                throw_invalid(param, e.what());
            }
        }
    }
    if (roots.empty())
        throw_invalid(param,
                      "loading adapters by path is disabled: start the server with --adapters DIR and put "
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
