// ChatTemplate: template discovery in a model directory, special tokens, message normalisation and the
// variables transformers passes to the template.
#include "tokenizer/jinja/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace loradesk::jinja {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw_expected(ErrorCode::io, "cannot read '" + p.string() + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

nlohmann::json read_json(const fs::path& p) {
    try {
        return nlohmann::json::parse(read_text(p));
    } catch (const nlohmann::json::parse_error& e) {
        throw_expected(ErrorCode::corrupt_file, "'" + p.string() + "' is not valid JSON: " + e.what());
    }
}

std::shared_ptr<const Template> compile(const std::string& source, const std::string& what) {
    try {
        return std::make_shared<const Template>(source);
    } catch (const TemplateError& e) {
        throw_expected(ErrorCode::unsupported, what + ": " + e.what());
    }
}

// Token values are strings or {"__type": "AddedToken", "content": ...} objects.
std::optional<std::string> token_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
}

std::string describe(std::size_t i, const char* what) { return "messages[" + std::to_string(i) + "]: " + what; }

}  // namespace

ChatTemplate ChatTemplate::from_file(const std::string& model_dir, const std::string& template_file) {
    fs::path file(template_file);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
        throw_expected(ErrorCode::not_found, "--chat-template file '" + template_file + "' does not exist");
    nlohmann::json config = nlohmann::json::object();
    if (fs::exists(fs::path(model_dir) / "tokenizer_config.json"))
        config = read_json(fs::path(model_dir) / "tokenizer_config.json");
    std::string source = read_text(file);
    if (source.empty())
        throw_expected(ErrorCode::invalid_argument, "--chat-template file '" + template_file + "' is empty");
    return from_config(config, source);
}

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir) {
    fs::path root(dir);
    if (!fs::is_directory(root))
        throw_expected(ErrorCode::not_found, "tokenizer directory '" + dir + "' does not exist");
    nlohmann::json config = nlohmann::json::object();
    if (fs::exists(root / "tokenizer_config.json")) config = read_json(root / "tokenizer_config.json");
    std::string source;
    if (fs::exists(root / "chat_template.jinja")) {
        source = read_text(root / "chat_template.jinja");
    } else if (!config.contains("chat_template") && fs::exists(root / "chat_template.json")) {
        nlohmann::json t = read_json(root / "chat_template.json");
        if (t.contains("chat_template") && t["chat_template"].is_string())
            source = t["chat_template"].get<std::string>();
    }
    return from_config(config, source);
}

ChatTemplate ChatTemplate::from_config(const nlohmann::json& config, const std::string& template_source) {
    ChatTemplate ct;
    if (!template_source.empty()) {
        ct.m_default = compile(template_source, "chat template");
        ct.m_source = template_source;
    } else if (config.is_object() && config.contains("chat_template") && config["chat_template"].is_string()) {
        ct.m_source = config["chat_template"].get<std::string>();
        ct.m_default = compile(ct.m_source, "chat template");
    } else if (config.is_object() && config.contains("chat_template") && config["chat_template"].is_array()) {
        for (auto& entry : config["chat_template"]) {
            if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
                !entry["name"].is_string() || !entry["template"].is_string())
                throw_expected(
                    ErrorCode::corrupt_file,
                    "tokenizer_config.json: chat_template list entries must be {\"name\", \"template\"} strings");
            std::string name = entry["name"].get<std::string>();
            auto t = compile(entry["template"].get<std::string>(), "chat template '" + name + "'");
            if (name == "default" || name == "tool_use") ct.m_source += entry["template"].get<std::string>() + "\n";
            if (name == "default")
                ct.m_default = t;
            else if (name == "tool_use")
                ct.m_tool_use = t;
        }
        if (!ct.m_default && !ct.m_tool_use)
            throw_expected(
                ErrorCode::unsupported,
                "tokenizer_config.json: chat_template list has neither a 'default' nor a 'tool_use' template");
    }
    // not_found: a base ("-Base") checkpoint without a template is normal, and the engine serves it
    // without chat.
    if (!ct.m_default && !ct.m_tool_use)
        throw_expected(ErrorCode::not_found,
                       "this tokenizer has no chat template (add chat_template to tokenizer_config.json or a "
                       "chat_template.jinja file next to it)");
    if (config.is_object()) {
        for (const char* key :
             {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
            if (config.contains(key))
                if (auto text = token_text(config[key])) ct.m_special_tokens.emplace_back(key, Value::string(*text));
        if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
            ValueList extra;
            for (auto& t : config["additional_special_tokens"])
                if (auto text = token_text(t)) extra.push_back(Value::string(*text));
            ct.m_special_tokens.emplace_back("additional_special_tokens", Value::list(std::move(extra)));
        }
    }
    return ct;
}

nlohmann::ordered_json ChatTemplate::normalize_messages(const nlohmann::ordered_json& messages) {
    if (!messages.is_array())
        throw_expected(ErrorCode::invalid_argument, "messages must be a JSON array of message objects");
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < messages.size(); ++i) {
        nlohmann::ordered_json m = messages[i];
        if (!m.is_object())
            throw_expected(ErrorCode::invalid_argument, describe(i, "each message must be a JSON object"));
        if (!m.contains("role") || !m["role"].is_string())
            throw_expected(ErrorCode::invalid_argument, describe(i, "'role' is required and must be a string"));
        if (m["role"] == "developer") m["role"] = "system";
        if (m.contains("content") && m["content"].is_array()) {
            std::string text;
            bool first = true;
            for (auto& part : m["content"]) {
                std::string type = part.is_object() && part.contains("type") && part["type"].is_string()
                                       ? part["type"].get<std::string>()
                                       : "";
                if (type != "text" || !part.contains("text") || !part["text"].is_string())
                    throw_expected(
                        ErrorCode::invalid_argument,
                        describe(i, "content parts must be {\"type\": \"text\", \"text\": ...}; part type '") + type +
                            "' is not supported by this text-only server");
                if (!first) text += "\n";
                first = false;
                text += part["text"].get<std::string>();
            }
            m["content"] = text;
        } else if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null()) {
            throw_expected(ErrorCode::invalid_argument,
                           describe(i, "content must be a string, null or an array of text parts"));
        }
        if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
            for (auto& call : m["tool_calls"]) {
                if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
                auto& fn = call["function"];
                if (fn.contains("arguments") && fn["arguments"].is_string()) {
                    try {
                        fn["arguments"] = nlohmann::ordered_json::parse(fn["arguments"].get<std::string>());
                    } catch (const nlohmann::ordered_json::parse_error&) {
                        throw_expected(ErrorCode::invalid_argument,
                                       describe(i,
                                                "tool_calls[].function.arguments is not valid JSON (it must be a JSON "
                                                "object encoded as a string)"));
                    }
                }
            }
        }
        out.push_back(std::move(m));
    }
    return out;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, const nlohmann::ordered_json& extra_kwargs) const {
    bool has_tools = !tools.is_null();
    const Template* t = (has_tools && m_tool_use) ? m_tool_use.get() : m_default ? m_default.get() : m_tool_use.get();
    if (has_tools && !tools.is_array()) throw_expected(ErrorCode::invalid_argument, "tools must be a JSON array");
    if (!extra_kwargs.is_null() && !extra_kwargs.is_object())
        throw_expected(ErrorCode::invalid_argument, "chat template kwargs must be a JSON object");
    std::vector<std::pair<std::string, Value>> vars = m_special_tokens;
    if (extra_kwargs.is_object())
        for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) {
            const std::string& k = it.key();
            if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt")
                throw_expected(ErrorCode::invalid_argument,
                               "chat template kwarg '" + k + "' is reserved; pass it through its own field");
            vars.emplace_back(k, Value::from_json(it.value()));
        }
    vars.emplace_back("messages", Value::from_json(normalize_messages(messages)));
    vars.emplace_back("tools", has_tools ? Value::from_json(tools) : Value::none());
    vars.emplace_back("documents", Value::none());
    vars.emplace_back("add_generation_prompt", Value::boolean(add_generation_prompt));
    return t->render(vars);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& tools,
                                 bool add_generation_prompt, const nlohmann::json& extra_kwargs) const {
    auto conv = [](const nlohmann::json& j) { return nlohmann::ordered_json::parse(j.dump()); };
    return render(conv(messages), conv(tools), add_generation_prompt, conv(extra_kwargs));
}

}  // namespace loradesk::jinja
