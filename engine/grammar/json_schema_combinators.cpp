// SchemaCompiler for enum / const and the combinators anyOf / oneOf (read as anyOf) / allOf (one entry, or object
// schemas merged into one).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "grammar/gbnf_text.h"
#include "grammar/json_schema_compiler.h"

namespace loradesk::grammar::json_schema {
namespace {

bool matches_type(const Json& v, std::string_view type) {
    if (type == "string") return v.is_string();
    if (type == "number") return v.is_number();
    if (type == "integer")
        return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
    if (type == "boolean") return v.is_boolean();
    if (type == "null") return v.is_null();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    return false;
}

}  // namespace

std::string SchemaCompiler::visit_values(const Json& schema, const std::string& path, const std::string& hint) {
    std::vector<Json> values;
    if (auto c = schema.find("const"); c != schema.end()) values.push_back(*c);
    if (auto e = schema.find("enum"); e != schema.end()) {
        if (!e->is_array() || e->empty()) fail(fmt::format("'enum' at {} must be a non-empty array", path_text(path)));
        std::vector<Json> listed(e->begin(), e->end());
        if (!values.empty()) {
            // const and enum together: the const value, if the enum lists it.
            if (std::find(listed.begin(), listed.end(), values[0]) == listed.end()) values.clear();
        } else {
            values = std::move(listed);
        }
    }
    const std::vector<std::string> types = declared_types(schema, path);
    if (!types.empty())
        std::erase_if(values, [&](const Json& v) {
            return std::none_of(types.begin(), types.end(), [&](const auto& t) { return matches_type(v, t); });
        });
    if (values.empty())
        fail(fmt::format("no value of 'enum'/'const' at {} satisfies the rest of the schema", path_text(path)));
    std::string body;
    for (const auto& v : values) body += (body.empty() ? "" : " | ") + gbnf::literal(v.dump());
    if (values.size() > 1) body = "( " + body + " )";
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint, body + gap());
}

std::string SchemaCompiler::visit_any_of(const Json& schema, const std::string& path, const std::string& hint,
                                         int depth) {
    const char* key = schema.contains("anyOf") ? "anyOf" : "oneOf";
    for (const auto& [k, value] : schema.items())
        if (k != key && !is_annotation(k))
            fail(fmt::format("unsupported JSON Schema keyword '{}' beside {} at {}; move it into each branch", k, key,
                             path_text(path)));
    const Json& branches = schema[key];
    if (!branches.is_array() || branches.empty())
        fail(fmt::format("'{}' at {} must be a non-empty array of schemas", key, path_text(path)));
    std::string body;
    for (std::size_t i = 0; i < branches.size(); ++i) {
        const std::string sub_path = fmt::format("{}/{}/{}", path, key, i);
        body += (i ? " | " : "") + visit(branches[i], sub_path, fmt::format("{}-{}", hint, i), depth + 1);
    }
    return add_rule(hint, body);
}

std::string SchemaCompiler::visit_all_of(const Json& schema, const std::string& path, const std::string& hint,
                                         int depth) {
    const Json& entries = schema["allOf"];
    if (!entries.is_array() || entries.empty())
        fail(fmt::format("'allOf' at {} must be a non-empty array of schemas", path_text(path)));
    // The siblings of allOf count as one more entry.
    std::vector<std::pair<const Json*, std::string>> parts;
    Json siblings = Json::object();
    for (const auto& [k, v] : schema.items())
        if (k != "allOf" && !is_annotation(k)) siblings[k] = v;
    for (std::size_t i = 0; i < entries.size(); ++i)
        parts.emplace_back(&entries[i], fmt::format("{}/allOf/{}", path, i));
    if (!siblings.empty()) parts.emplace_back(&siblings, path);
    if (parts.size() == 1) return visit(*parts[0].first, parts[0].second, hint, depth + 1);
    // Several entries: only object schemas merge exactly (union of properties and required).
    Json merged = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
    for (auto [part, part_path] : parts) {
        for (int hops = 0; part->is_object() && part->contains("$ref"); ++hops) {
            const Json& ref = (*part)["$ref"];
            if (hops > 32 || !ref.is_string() || !ref.get<std::string>().starts_with("#"))
                fail(fmt::format("$ref in allOf at {} must be a local reference", path_text(part_path)));
            try {
                part_path = percent_decode(ref.get<std::string>().substr(1));
                part = &m_root.at(Json::json_pointer(part_path));
            } catch (const std::exception&) {
                fail(fmt::format("$ref '{}' in allOf at {} does not resolve", ref.get<std::string>(), path_text(path)));
            }
        }
        if (!part->is_object()) fail(fmt::format("allOf entry at {} must be an object schema", path_text(part_path)));
        for (const auto& [k, v] : part->items()) {
            if (is_annotation(k)) continue;
            if ((k == "type" && v == "object") || (k == "additionalProperties" && v == true)) continue;
            // unevaluatedProperties sees the properties of every entry: false closes the merged object.
            if (k == "unevaluatedProperties" && v.is_boolean() && part == &siblings) {
                merged["additionalProperties"] = v;
                continue;
            }
            if (k == "properties" && v.is_object()) {
                for (const auto& [name, sub] : v.items()) {
                    if (merged["properties"].contains(name))
                        fail(
                            fmt::format("allOf at {} declares property '{}' twice; only disjoint object schemas can "
                                        "be merged",
                                        path_text(path), name));
                    merged["properties"][name] = sub;
                }
            } else if (k == "required" && v.is_array()) {
                for (const auto& r : v) merged["required"].push_back(r);
            } else {
                fail(
                    fmt::format("unsupported JSON Schema keyword '{}' at {} inside allOf: allOf is supported with one "
                                "entry, or to merge object schemas (type, properties, required)",
                                k, path_text(part_path)));
            }
        }
    }
    return visit(merged, path, hint, depth + 1);
}

}  // namespace loradesk::grammar::json_schema
