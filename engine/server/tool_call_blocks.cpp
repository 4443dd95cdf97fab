// Whole-call parsers per family; see tool_call_blocks.h.
#include "server/tool_call_blocks.h"

namespace loradesk::server {

using ojson = nlohmann::ordered_json;

namespace {

// Deeper nesting is not a tool call anyone writes; refusing it keeps parsing and dumping off deep recursion.
constexpr int kMaxJsonDepth = 256;

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<ojson> parse_json(std::string_view text) {
    if (text.empty() || json_value_end(text, 0) != text.size()) return std::nullopt;
    ojson v = ojson::parse(text.begin(), text.end(), nullptr, false);
    if (v.is_discarded()) return std::nullopt;
    return v;
}

std::optional<ParsedToolCall> call_from_json(const ojson& call, bool parameters_too) {
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
    const char* key = call.contains("arguments") || !parameters_too ? "arguments" : "parameters";
    ojson args = call.contains(key) ? call[key] : ojson::object();
    if (args.is_string()) {  // some models write the arguments as a JSON string, as OpenAI's wire format does
        auto inner = parse_json(trim(args.get<std::string>()));
        if (!inner) return std::nullopt;
        args = std::move(*inner);
    }
    if (!args.is_object()) return std::nullopt;
    return ParsedToolCall{call["name"].get<std::string>(), args.dump()};
}

}  // namespace

std::size_t json_value_end(std::string_view text, std::size_t pos) {
    if (pos >= text.size() || (text[pos] != '{' && text[pos] != '[')) return kNotJson;
    int depth = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = pos; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > kMaxJsonDepth) return kNotJson;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return kJsonIncomplete;
}

bool offers_tool(const ojson& tools, std::string_view name) {
    if (!tools.is_array()) return false;
    for (const ojson& t : tools)
        if (t.is_object() && t.contains("function") && t["function"].is_object() && t["function"].contains("name") &&
            t["function"]["name"].is_string() && t["function"]["name"].get<std::string>() == name)
            return true;
    return false;
}

std::optional<ParsedToolCall> parse_json_call(std::string_view text, bool parameters_too) {
    auto v = parse_json(trim(text));
    if (!v) return std::nullopt;
    return call_from_json(*v, parameters_too);
}

std::optional<std::string> parse_json_arguments(std::string_view text) {
    auto v = parse_json(trim(text));
    if (!v || !v->is_object()) return std::nullopt;
    return v->dump();
}

std::optional<std::vector<ParsedToolCall>> parse_json_call_list(std::string_view text) {
    auto v = parse_json(trim(text));
    if (!v) return std::nullopt;
    if (v->is_object()) *v = ojson::array({std::move(*v)});
    if (!v->is_array() || v->empty()) return std::nullopt;
    std::vector<ParsedToolCall> calls;
    for (const ojson& c : *v) {
        auto call = call_from_json(c, false);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
    }
    return calls;
}

}  // namespace loradesk::server
