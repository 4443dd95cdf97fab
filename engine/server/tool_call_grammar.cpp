// Tool-call grammars per ToolCallSyntax::ArgsForm.
#include "server/tool_call_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "grammar/gbnf_choice.h"
#include "grammar/json_schema_grammar.h"
#include "server/api_error.h"

namespace loradesk::server {

using json = nlohmann::ordered_json;  // tool schemas keep the client's property order

using grammar::gbnf_literal;

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
    const json* props =
        schema.contains("properties") && schema["properties"].is_object() ? &schema["properties"] : nullptr;
    std::vector<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
        for (const json& r : schema["required"])
            if (r.is_string()) required.push_back(r.get<std::string>());
    int k = 0;
    if (props) {
        for (const auto& [pname, pschema] : props->items()) {
            const std::string value_rule = fmt::format("{}p{}", prefix, k);
            // Qwen3-Coder writes string values raw (no quotes), everything else as JSON text.
            const bool typed_string = pschema.is_object() && pschema.value("type", json()) == "string";
            std::vector<std::string> raw_choices;  // an enum or const of strings: those words, unquoted
            if (pschema.is_object()) {
                const json* list = pschema.contains("enum") ? &pschema["enum"] : nullptr;
                const json single = pschema.contains("const") ? json::array({pschema["const"]}) : json();
                if (!list && !single.is_null()) list = &single;
                if (list && list->is_array() && !list->empty() &&
                    std::all_of(list->begin(), list->end(), [](const json& v) { return v.is_string(); }))
                    for (const json& v : *list) raw_choices.push_back(v.get<std::string>());
            }
            if (!raw_choices.empty()) {
                std::string alts;
                for (const std::string& c : raw_choices) alts += (alts.empty() ? "" : " | ") + gbnf_literal(c);
                rules += fmt::format("{}root ::= {}\n", value_rule, alts);
            } else if (typed_string) {
                for (const char* key : {"pattern", "format"})
                    if (pschema.contains(key))
                        throw ApiError(
                            400, "invalid_request_error",
                            fmt::format("tool '{}': parameter '{}' uses '{}', which the Qwen3-Coder call syntax "
                                        "(raw string values) cannot enforce",
                                        name, pname, key),
                            "tools", "unsupported");
                // Code points other than '<', within the schema's length bounds.
                const json& property =
                    pschema;  // (structured bindings cannot be captured before C++20's P1091 in clang 14)
                const auto bound = [&property](const char* key) -> long long {
                    auto it = property.find(key);
                    return it != property.end() && it->is_number_unsigned() ? it->get<long long>() : -1;
                };
                const long long lo = std::max(0LL, bound("minLength")), hi = bound("maxLength");
                const std::string reps = hi >= 0  ? fmt::format("{{{},{}}}", lo, std::max(lo, hi))
                                         : lo > 0 ? fmt::format("{{{},}}", lo)
                                                  : std::string("*");
                rules += fmt::format("{}root ::= [^<]{}\n", value_rule, reps);
            } else {
                rules += schema_rules(pschema, value_rule, name);
            }
            const std::string item = gbnf_literal("<parameter=" + pname + ">\n") + " " + value_rule + "root " +
                                     gbnf_literal("\n</parameter>\n");
            const bool req = std::find(required.begin(), required.end(), pname) != required.end();
            body += req ? fmt::format(" {}", item) : fmt::format(" ({})?", item);
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
        throw_invalid("tool_choice",
                      fmt::format("tool_choice names the function '{}', which is not among the tools", choice.only));
    std::string g;
    g += "call ::= ";
    for (std::size_t i = 0; i < calls.size(); ++i) g += fmt::format("{}call{}", i ? " | " : "", i);
    g += "\n";
    for (const std::string& c : calls) g += c;
    const int more = choice.parallel && choice.only.empty() ? ToolChoiceGrammar::kMaxCalls - 1 : 0;
    const std::string repeat = more > 0 ? fmt::format("{{0,{}}}", more) : "{0}";
    auto lit = [](const std::string& s) { return s.empty() ? std::string() : gbnf_literal(s) + " "; };
    // Llama 3 writes bare JSON calls (<|python_tag|> is optional): the grammar keeps to the plain form.
    const std::string list_begin = syntax.list_begin_optional ? std::string() : syntax.list_begin;
    const std::string one = fmt::format("({}call {})", lit(syntax.begin), lit(syntax.end));
    g += fmt::format("root ::= {}{}", lit(list_begin), one);
    if (more > 0) g += fmt::format(" ({}{}){}", lit(syntax.separator), one, repeat);
    g += fmt::format(" {}\n", lit(syntax.list_end));
    return g + rules;
}

}  // namespace loradesk::server
