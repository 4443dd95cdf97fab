// Ollama request bodies translated into OpenAI ones; see ollama_parse.h.
#include "server/ollama_parse.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "grammar/json_schema_grammar.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/output_constraint.h"

namespace loradesk::server::ollama {

using nlohmann::json;

namespace {

// Ollama option -> OpenAI field, for the options that sampling_parse.h validates.
const std::pair<const char*, const char*> kOptionFields[] = {
    {"temperature", "temperature"},
    {"top_p", "top_p"},
    {"top_k", "top_k"},
    {"min_p", "min_p"},
    {"seed", "seed"},
    {"repeat_penalty", "repetition_penalty"},
    {"presence_penalty", "presence_penalty"},
    {"frequency_penalty", "frequency_penalty"},
    {"stop", "stop"},
};

// An error of the OpenAI parser about a field the client wrote as an Ollama option, reworded to name it so.
ApiError renamed(const ApiError& e) {
    for (const auto& [ollama, openai] : kOptionFields) {
        if (e.param != openai) continue;
        std::string message = e.what();
        const std::string from = fmt::format("'{}'", openai), to = fmt::format("'options.{}'", ollama);
        for (std::size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
            message.replace(at, from.size(), to);
        ApiError out(e.status, e.type, message, std::string("options.") + ollama, e.code);
        out.retry_after_s = e.retry_after_s;
        return out;
    }
    return e;
}

[[noreturn]] void refuse(const std::string& field, const std::string& message) {
    throw ApiError(400, "invalid_request_error", message, field, "unsupported");
}

// Fields that loradesk cannot honour; each is refused rather than ignored, since ignoring would change the
// answer the client asked for without telling it.
void refuse_unsupported(const json& body) {
    if (const json* v = field(body, "template"); v && !(v->is_string() && v->get_ref<const std::string&>().empty()))
        refuse("template",
               "'template' is not supported: loradesk renders the model's own Jinja chat template; send "
               "a fully formatted prompt with \"raw\": true, or start the server with --chat-template FILE");
    if (const json* v = field(body, "images"); v && !(v->is_array() && v->empty()))
        refuse("images", "'images' are not supported: loradesk serves text-only models");
    if (const json* v = field(body, "suffix"); v && !(v->is_string() && v->get_ref<const std::string&>().empty()))
        refuse("suffix",
               "'suffix' (fill-in-the-middle) is not supported; put the model's FIM tokens into the prompt "
               "with \"raw\": true instead");
    // Ollama deprecated `context` too; loradesk never returns one, so only a hand-made request can carry it.
    if (const json* v = field(body, "context"); v && !(v->is_array() && v->empty()))
        refuse("context",
               "'context' (token ids of an earlier /api/generate answer) is not supported: send the "
               "conversation as messages to /api/chat, or the whole text as the prompt");
}

// options -> the OpenAI body's sampling, stop and max_tokens fields.
void map_options(const json& body, json& out) {
    const json* options = field(body, "options");
    if (!options) return;
    if (!options->is_object()) throw_invalid("options", "'options' must be an object such as {\"temperature\": 0.7}");
    for (const auto& [ollama, openai] : kOptionFields)
        if (const json* v = field(*options, ollama)) out[openai] = *v;
    if (const json* v = field(*options, "mirostat"); v && !(v->is_number() && v->get<double>() == 0))
        refuse("options.mirostat",
               "'options.mirostat' is not supported: loradesk samples with temperature, top_k, "
               "top_p and min_p; remove mirostat or set it to 0");
    if (const json* v = field(*options, "typical_p"); v && !(v->is_number() && v->get<double>() == 1))
        refuse("options.typical_p",
               "'options.typical_p' is not supported; remove it or set it to 1 (off), and use "
               "top_p or min_p instead");
    // num_ctx, num_batch, num_gpu, num_thread, use_mmap, ...: the server's start-up options decide memory and
    // threads; requests cannot change them, and they do not change the answer. repeat_last_n: the penalty
    // covers the whole sequence.
    if (const json* v = field(*options, "num_predict")) {
        const int64_t n = as_integer(*v, "options.num_predict");
        if (n == -1 || n == -2)
            out["max_tokens"] = std::numeric_limits<int32_t>::max();  // clipped to the context
        else if (n >= 1 && n <= std::numeric_limits<int32_t>::max())
            out["max_tokens"] = n;
        else
            throw_invalid("options.num_predict",
                          fmt::format("'options.num_predict' must be at least 1, or -1 (until the context is full) or "
                                      "-2 (the same), got {}",
                                      n));
    }
}

// format: "json" (any JSON object) or a JSON schema, enforced by a grammar as the OpenAI routes do; it travels
// as the llama.cpp-style "grammar" field that the OpenAI parsers read, so errors here name `format`.
void map_format(const json& body, json& out) {
    const json* v = field(body, "format");
    if (!v || (v->is_string() && v->get_ref<const std::string&>().empty())) return;
    if (v->is_string()) {
        if (*v != "json") throw_invalid("format", "'format' must be \"json\" or a JSON schema object");
        out["grammar"] = grammar::json_object_gbnf();
        return;
    }
    out["grammar"] = schema_grammar(nlohmann::ordered_json(*v), false, "format");
}

// think: true/false, or Ollama's levels "high" / "medium" / "low" for models that take a reasoning effort.
void map_think(const json& body, json& out) {
    const json* v = field(body, "think");
    if (!v) return;
    json kwargs = json::object();
    if (v->is_boolean()) {
        kwargs["enable_thinking"] = v->get<bool>();
    } else if (v->is_string() && (*v == "high" || *v == "medium" || *v == "low")) {
        kwargs["enable_thinking"] = true;
        kwargs["reasoning_effort"] = *v;
    } else {
        throw_invalid("think", "'think' must be true, false, \"high\", \"medium\" or \"low\"");
    }
    out["chat_template_kwargs"] = std::move(kwargs);
}

// What both endpoints share: model, stream, keep_alive, refusals, options, logprobs.
json common_body(const json& body, OllamaRequest& out) {
    out.model = require_string(body, "model");
    out.stream = get_bool(body, "stream", true);  // Ollama streams unless told not to
    out.keep_alive = parse_keep_alive(body);
    refuse_unsupported(body);
    json o = json::object();
    o["model"] = out.model;
    map_format(body, o);
    map_options(body, o);
    // Read here rather than by the OpenAI parsers: /v1/completions takes logprobs as a count of 0..5.
    out.logprobs = get_bool(body, "logprobs", false);
    if (auto top = get_int(body, "top_logprobs", 0, 20)) {
        if (!out.logprobs) throw_invalid("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
        out.top_logprobs = int(*top);
    }
    return o;
}

void finish(OllamaRequest& out) {
    out.parsed.stream = out.stream;
    out.parsed.logprobs = out.logprobs;
    out.parsed.top_logprobs = out.top_logprobs;
    for (api::GenerateRequest& r : out.parsed.prompts) r.logprobs = out.logprobs ? out.top_logprobs : -1;
}

// The OpenAI parser's errors, reworded where the field was an Ollama option.
template <class Parse>
ParsedGeneration parse_translated(Parse parse, const json& openai_body, const ServerOptions& options) {
    try {
        ParsedGeneration parsed = parse(openai_body, options, nullptr);
        // num_predict -1 / -2 ("until the context is full") arrive as the largest max_tokens: clipped to what the
        // context leaves, never the overflow error an explicit max_tokens gets.
        if (const json* m = field(openai_body, "max_tokens"); m && *m == std::numeric_limits<int32_t>::max())
            for (api::GenerateRequest& r : parsed.prompts) r.stop.strict_max_tokens = false;
        return parsed;
    } catch (const ApiError& e) {
        throw renamed(e);
    }
}

json chat_messages(const json& messages) {
    if (!messages.is_array()) throw_invalid("messages", "'messages' must be an array of {role, content} objects");
    json out = json::array();
    for (std::size_t i = 0; i < messages.size(); ++i) {
        json m = messages[i];
        if (!m.is_object()) throw_invalid("messages", fmt::format("messages[{}] must be an object", i));
        if (const json* images = field(m, "images"); images && !(images->is_array() && images->empty()))
            refuse("messages", fmt::format("messages[{}].images: images are not supported: loradesk serves text-only "
                                           "models",
                                           i));
        m.erase("images");
        // Templates (Qwen3's among them) read an assistant turn's reasoning as reasoning_content.
        if (const json* thinking = field(m, "thinking"); thinking && !m.contains("reasoning_content"))
            m["reasoning_content"] = *thinking;
        m.erase("thinking");
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace

OllamaRequest parse_chat(const json& body, const ServerOptions& options) {
    OllamaRequest out;
    out.chat = true;
    json o = common_body(body, out);
    const json* messages = field(body, "messages");
    if (!messages || (messages->is_array() && messages->empty())) {
        out.load_only = true;
        return out;
    }
    o["messages"] = chat_messages(*messages);
    if (const json* v = field(body, "tools")) o["tools"] = *v;
    map_think(body, o);
    out.parsed = parse_translated(parse_chat_request, o, options);
    finish(out);
    return out;
}

OllamaRequest parse_generate(const json& body, const ServerOptions& options) {
    OllamaRequest out;
    out.chat = false;
    json o = common_body(body, out);
    const json* prompt = field(body, "prompt");
    if (prompt && !prompt->is_string()) throw_invalid("prompt", "'prompt' must be a string");
    if (!prompt || prompt->get_ref<const std::string&>().empty()) {
        out.load_only = true;
        return out;
    }
    const bool raw = get_bool(body, "raw", false);
    const json* system = field(body, "system");
    if (system && !system->is_string()) throw_invalid("system", "'system' must be a string");
    if (raw) {
        // The prompt is the model's input as it is: there is no template to put a system turn or a thinking
        // switch into, so these would be lost without a word.
        if (system && !system->get_ref<const std::string&>().empty())
            throw_invalid("system", "'system' has no effect with \"raw\": true; write the system turn into the prompt");
        if (field(body, "think"))
            throw_invalid("think",
                          "'think' has no effect with \"raw\": true; write the template's thinking switch "
                          "into the prompt");
        o["prompt"] = *prompt;
        out.parsed = parse_translated(parse_completion_request, o, options);
    } else {
        // Ollama renders a generate prompt with the model's template as one user turn (after the system prompt).
        json messages = json::array();
        if (system && !system->get_ref<const std::string&>().empty())
            messages.push_back({{"role", "system"}, {"content", *system}});
        messages.push_back({{"role", "user"}, {"content", *prompt}});
        o["messages"] = std::move(messages);
        map_think(body, o);
        out.parsed = parse_translated(parse_chat_request, o, options);
    }
    finish(out);
    return out;
}

}  // namespace loradesk::server::ollama
