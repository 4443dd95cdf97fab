// Tool-call grammars per ToolCallSyntax::ArgsForm.
#include "server/tool_call_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "grammar/json_schema_grammar.h"
#include "server/api_error.h"

namespace loradesk::server {

using nlohmann::json;

std::string gbnf_literal(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02X}", c);
                else out += char(c);
        }
    }
    return out + "\"";
}

namespace {

const json& parameters_of(const json& tool) {
    static const json any_object = {{"type", "object"}};
    const json& f = tool["function"];
    auto it = f.find("parameters");
    return it == f.end() || it->is_null() ? any_object : *it;
}

// Rules for one JSON Schema, entry rule `<prefix>root`; 400 naming the tool when it cannot be enforced.
std::string schema_rules(const json& schema, const std::string& prefix, const std::string& tool) {
    grammar::SchemaGrammarOptions options;
    auto rules = grammar::json_schema_rules(schema, prefix, options);
    if (!rules.ok())
        throw ApiError(400, "invalid_request_error",
                       fmt::format("tool '{}': {} (needed to enforce tool_choice)", tool, rules.status().message),
                       "tools", "unsupported");
    return std::move(rules).value();
}

// Qwen3-Coder's XML call: each property as <parameter=NAME>\nVALUE\n</parameter>\n, in schema order, required ones
// always, optional ones maybe. String values are raw text up to the closing tag (no '<' inside, so the tag cannot
// be mistaken); other types are JSON text of their schema.
std::string xml_call_rules(const json& schema, const std::string& prefix, const std::string& name, std::string& rules) {
    std::string body = gbnf_literal("<function=" + name + ">\n");
    const json* props = schema.contains("properties") && schema["properties"].is_object() ? &schema["properties"] : nullptr;
    std::vector<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
        for (const json& r : schema["required"])
            if (r.is_string()) required.push_back(r.get<std::string>());
    int k = 0;
    if (props) {
        for (const auto& [pname, pschema] : props->items()) {
            const std::string value_rule = fmt::format("{}p{}", prefix, k);
            const bool is_string = pschema.is_object() && pschema.value("type", json()) == "string" &&
                                   !pschema.contains("enum") && !pschema.contains("const") && !pschema.contains("pattern") &&
                                   !pschema.contains("format");
            if (is_string) {
                rules += fmt::format("{}root ::= [^<]*\n", value_rule);
            } else {
                rules += schema_rules(pschema, value_rule, name);
            }
            const std::string item = gbnf_literal("<parameter=" + pname + ">\n") + " " + value_rule + "root " +
                                     gbnf_literal("\n</parameter>\n");
            const bool req = std::find(required.begin(), required.end(), pname) != required.end();
            body += " " + (req ? item : "(" + item + ")?");
            ++k;
        }
    }
    return body + " " + gbnf_literal("</function>");
}

}  // namespace

std::string tool_call_grammar(const ToolCallSyntax& syntax, const json& tools, const ToolChoiceGrammar& choice) {
    using Form = ToolCallSyntax::ArgsForm;
    std::string rules;
    std::vector<std::string> calls;
    for (std::size_t i = 0; i < tools.size(); ++i) {
        const std::string name = tools[i]["function"]["name"].get<std::string>();
        if (!choice.only.empty() && name != choice.only) continue;
        const std::string prefix = fmt::format("t{}-", i);
        const json& params = parameters_of(tools[i]);
        std::string call;
        switch (syntax.form) {
            case Form::json_object_name_arguments:
            case Form::json_array_name_arguments:
            case Form::json_object_name_parameters: {
                rules += schema_rules(params, prefix, name);
                const char* key = syntax.form == Form::json_object_name_parameters ? "parameters" : "arguments";
                call = gbnf_literal(fmt::format("{{\"name\": \"{}\", \"{}\": ", name, key)) + " " + prefix + "root " +
                       gbnf_literal("}");
                break;
            }
            case Form::mistral_v11:
                rules += schema_rules(params, prefix, name);
                call = gbnf_literal(name + "[ARGS]") + " " + prefix + "root";
                break;
            case Form::qwen3_xml:
                call = xml_call_rules(params, prefix, name, rules);
                break;
        }
        calls.push_back(fmt::format("call{} ::= {}\n", calls.size(), call));
    }
    if (calls.empty())
        throw_invalid("tool_choice", fmt::format("tool_choice names the function '{}', which is not among the tools",
                                                 choice.only));
    std::string g;
    g += "call ::= ";
    for (std::size_t i = 0; i < calls.size(); ++i) g += (i ? " | call" : "call") + std::to_string(i);
    g += "\n";
    for (const std::string& c : calls) g += c;
    const int more = choice.parallel && choice.only.empty() ? ToolChoiceGrammar::kMaxCalls - 1 : 0;
    const std::string repeat = more > 0 ? fmt::format("{{0,{}}}", more) : "{0}";
    auto lit = [](const std::string& s) { return s.empty() ? std::string() : gbnf_literal(s) + " "; };
    // Llama 3 writes bare JSON calls (<|python_tag|> is optional): the grammar keeps to the plain form.
    const std::string begin = syntax.begin_optional ? std::string() : syntax.begin;
    if (syntax.form == Form::json_array_name_arguments) {
        // All calls in one array: begin [call, call] end.
        g += "root ::= " + lit(begin + "[") + "call ";
        if (more > 0) g += "(" + lit(", ") + "call)" + repeat + " ";
        g += lit("]" + syntax.end) + "\n";
    } else {
        const std::string one = "(" + lit(begin) + "call " + lit(syntax.end) + ")";
        g += "root ::= " + one;
        if (more > 0) g += " (" + lit(syntax.separator) + one + ")" + repeat;
        g += "\n";
    }
    return g + rules;
}

}  // namespace loradesk::server
