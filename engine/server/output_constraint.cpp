// response_format / guided_* / structured_outputs -> GBNF.
#include "server/output_constraint.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "grammar/gbnf_choice.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/regex_to_gbnf.h"
#include "server/api_error.h"

namespace loradesk::server {

using json = nlohmann::ordered_json;  // schemas keep the client's property order (json_fields.h)

namespace {

const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A grammar compiler's refusal (an unsupported keyword, a bad regex) as the client's 400.
std::string or_400(Result<std::string> r, const std::string& param) {
    if (!r.ok()) throw ApiError(400, "invalid_request_error", r.status().message, param, "unsupported");
    return std::move(r).value();
}

std::string string_field(const json& v, const std::string& param) {
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
        throw_invalid(param, fmt::format("'{}' must be a non-empty string", param));
    return v.get<std::string>();
}

std::string choice_grammar(const json& v, const std::string& param) {
    if (!v.is_array() || v.empty())
        throw_invalid(param, fmt::format("'{}' must be a non-empty array of strings", param));
    std::vector<std::string> choices;
    for (const json& c : v) {
        if (!c.is_string()) throw_invalid(param, fmt::format("'{}' must hold only strings", param));
        choices.push_back(c.get<std::string>());
    }
    return grammar::gbnf_for_choice(choices);
}

std::string regex_grammar(const json& v, const std::string& param) {
    return or_400(grammar::regex_to_gbnf(string_field(v, param)), param);
}

std::string response_format_grammar(const json& v) {
    const std::string param = "response_format";
    if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
        throw_invalid(param, "'response_format' must be an object with a \"type\": text, json_object or json_schema");
    const std::string type = v["type"].get<std::string>();
    if (type == "text") return {};
    if (type == "json_object") return grammar::json_object_gbnf();
    if (type == "json_schema") {
        const json* js = field(v, "json_schema");
        if (!js || !js->is_object())
            throw_invalid(param,
                          "response_format of type json_schema needs a \"json_schema\" object with a \"schema\"");
        const json* schema = field(*js, "schema");
        // OpenAI lets the schema be absent (any JSON object); strict defaults to false.
        if (!schema) return grammar::json_object_gbnf();
        const json* strict = field(*js, "strict");
        if (strict && !strict->is_boolean())
            throw_invalid(param, "response_format.json_schema.strict must be a boolean");
        return schema_grammar(*schema, strict && strict->get<bool>(), "response_format.json_schema.schema");
    }
    throw ApiError(
        400, "invalid_request_error",
        fmt::format("response_format type '{}' is not supported; use text, json_object or json_schema", type), param,
        "unsupported");
}

// vLLM's structured_outputs: {"json": schema, "regex": ..., "choice": [...], "grammar": ..., "json_object": true}.
std::string structured_outputs_grammar(const json& v) {
    const std::string param = "structured_outputs";
    if (!v.is_object()) throw_invalid(param, "'structured_outputs' must be an object");
    std::vector<std::pair<std::string, std::string>> found;
    for (const auto& [key, value] : v.items()) {
        if (value.is_null()) continue;
        const std::string p = param + "." + key;
        if (key == "json")
            found.emplace_back(key, schema_grammar(value, false, p));
        else if (key == "regex")
            found.emplace_back(key, regex_grammar(value, p));
        else if (key == "choice")
            found.emplace_back(key, choice_grammar(value, p));
        else if (key == "grammar")
            found.emplace_back(key, string_field(value, p));
        else if (key == "json_object") {
            if (!value.is_boolean()) throw_invalid(p, "'structured_outputs.json_object' must be a boolean");
            if (value.get<bool>()) found.emplace_back(key, grammar::json_object_gbnf());
        } else if (key == "disable_any_whitespace" || key == "disable_fallback" ||
                   key == "disable_additional_properties" || key == "whitespace_pattern" || key == "structural_tag") {
            if (key == "whitespace_pattern" || key == "structural_tag" || (value.is_boolean() && value.get<bool>()))
                throw ApiError(400, "invalid_request_error",
                               fmt::format("structured_outputs.{} is not supported by loradesk", key), p,
                               "unsupported");
        }
    }
    if (found.size() > 1)
        throw_invalid(param, fmt::format("'structured_outputs' must give one of json, regex, choice, grammar or "
                                         "json_object, not both {} and {}",
                                         found[0].first, found[1].first));
    return found.empty() ? std::string() : found[0].second;
}

}  // namespace

nlohmann::ordered_json ordered_fields_of(const nlohmann::json& body) {
    json out = json::object();
    if (!body.is_object()) return out;
    for (std::string_view name : kOrderedFields)
        if (auto it = body.find(std::string(name)); it != body.end()) out[std::string(name)] = *it;
    return out;
}

std::string schema_grammar(const json& schema, bool strict, const std::string& param) {
    json parsed;
    if (schema.is_string()) {
        // vLLM accepts guided_json as the schema's JSON text.
        parsed = json::parse(schema.get<std::string>(), nullptr, false);
        if (parsed.is_discarded()) throw_invalid(param, fmt::format("'{}' is a string that is not JSON", param));
    }
    const json& s = schema.is_string() ? parsed : schema;
    if (!s.is_object() && !s.is_boolean())
        throw_invalid(param, fmt::format("'{}' must be a JSON Schema object", param));
    grammar::SchemaGrammarOptions options;
    options.strict = strict;
    return or_400(grammar::json_schema_to_gbnf(s, options), param);
}

std::string output_constraint_grammar(const json& body) {
    std::vector<std::pair<std::string, std::string>> found;  // (field, grammar)
    auto add = [&](const char* name, auto&& make) {
        if (const json* v = field(body, name)) {
            std::string g = make(*v, std::string(name));
            if (!g.empty()) found.emplace_back(name, std::move(g));
        }
    };
    add("response_format", [](const json& v, const std::string&) { return response_format_grammar(v); });
    add("guided_json", [](const json& v, const std::string& p) { return schema_grammar(v, false, p); });
    add("guided_regex", regex_grammar);
    add("guided_choice", choice_grammar);
    add("guided_grammar", string_field);
    add("structured_outputs", [](const json& v, const std::string&) { return structured_outputs_grammar(v); });
    add("grammar", string_field);  // llama.cpp's server
    add("json_schema", [](const json& v, const std::string& p) { return schema_grammar(v, false, p); });  // llama.cpp
    if (field(body, "guided_whitespace_pattern"))
        throw ApiError(400, "invalid_request_error", "guided_whitespace_pattern is not supported by loradesk",
                       "guided_whitespace_pattern", "unsupported");
    if (found.size() > 1)
        throw_invalid(found[1].first, fmt::format("give one output constraint, not both '{}' and '{}'", found[0].first,
                                                  found[1].first));
    return found.empty() ? std::string() : std::move(found[0].second);
}

}  // namespace loradesk::server
