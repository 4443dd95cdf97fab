// Qwen3-Coder's XML-like call body (declared in tool_call_blocks.h):
//   <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>
// Values are raw text (no quoting), so their JSON type comes from the tool's schema, as vLLM's qwen3_coder
// parser does; a value that does not parse as the declared type stays a string rather than being lost.
#include <cstdlib>

#include "server/tool_call_blocks.h"

namespace loradesk::server {

using ojson = nlohmann::ordered_json;

namespace {

const ojson* declared_properties(const ojson& tools, std::string_view name) {
    if (!tools.is_array()) return nullptr;
    for (const ojson& t : tools) {
        if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
        const ojson& f = t["function"];
        if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>() != name) continue;
        if (!f.contains("parameters") || !f["parameters"].is_object()) return nullptr;
        const ojson& p = f["parameters"];
        return p.contains("properties") && p["properties"].is_object() ? &p["properties"] : nullptr;
    }
    return nullptr;
}

// The declared type ("string" when none): the first non-null one of a type list.
std::string declared_type(const ojson* properties, const std::string& param) {
    if (!properties || !properties->contains(param) || !(*properties)[param].is_object()) return "string";
    const ojson& schema = (*properties)[param];
    if (!schema.contains("type")) return "string";
    const ojson& type = schema["type"];
    if (type.is_string()) return type.get<std::string>();
    if (type.is_array())
        for (const ojson& t : type)
            if (t.is_string() && t.get<std::string>() != "null") return t.get<std::string>();
    return "string";
}

ojson typed_value(const std::string& raw, const std::string& type) {
    if (type == "string" || type == "str" || type == "text") return raw;
    if (raw == "null") return nullptr;
    ojson v = ojson::parse(raw, nullptr, false);
    if (v.is_discarded()) return raw;
    if (type == "integer" || type == "int") return v.is_number_integer() ? v : ojson(raw);
    if (type == "number" || type == "float") return v.is_number() ? v : ojson(raw);
    if (type == "boolean" || type == "bool") return v.is_boolean() ? v : ojson(raw);
    if (type == "object") return v.is_object() ? v : ojson(raw);
    if (type == "array") return v.is_array() ? v : ojson(raw);
    return v;  // a type we do not know: the JSON the model wrote
}

// One newline on each side belongs to the layout, not to the value.
std::string strip_layout_newlines(std::string_view v) {
    if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    return std::string(v);
}

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::optional<ParsedToolCall> parse_qwen3_coder_call(std::string_view body, const ojson& tools) {
    constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
    constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
    std::string_view s = trim(body);
    if (s.substr(0, kFunction.size()) != kFunction) return std::nullopt;
    const std::size_t name_end = s.find('>');
    if (name_end == std::string_view::npos) return std::nullopt;
    const std::string name(trim(s.substr(kFunction.size(), name_end - kFunction.size())));
    if (name.empty() || name.find_first_of("<\n") != std::string::npos) return std::nullopt;
    s.remove_prefix(name_end + 1);
    const ojson* properties = declared_properties(tools, name);
    ojson args = ojson::object();
    for (;;) {
        s = trim(s);
        if (s.substr(0, kFunctionEnd.size()) == kFunctionEnd) {
            if (!trim(s.substr(kFunctionEnd.size())).empty()) return std::nullopt;
            break;
        }
        if (s.substr(0, kParam.size()) != kParam) return std::nullopt;
        const std::size_t p_end = s.find('>');
        if (p_end == std::string_view::npos) return std::nullopt;
        const std::string param(trim(s.substr(kParam.size(), p_end - kParam.size())));
        if (param.empty()) return std::nullopt;
        s.remove_prefix(p_end + 1);
        // The model sometimes drops </parameter>: the value then runs to the next parameter or </function>.
        std::size_t v_end = s.find(kParamEnd);
        const std::size_t next = std::min(s.find(kParam), s.find(kFunctionEnd));
        std::size_t skip = kParamEnd.size();
        if (v_end == std::string_view::npos || next < v_end) v_end = next, skip = 0;
        if (v_end == std::string_view::npos) return std::nullopt;
        args[param] = typed_value(strip_layout_newlines(s.substr(0, v_end)), declared_type(properties, param));
        s.remove_prefix(v_end + skip);
    }
    return ParsedToolCall{name, args.dump()};
}

}  // namespace loradesk::server
