// SchemaCompiler core: rule bookkeeping, the keyword policy, dispatch on type and $ref.
// Types with more to say live in json_schema_scalars.cpp and json_schema_containers.cpp, enum/const and the
// combinators in json_schema_combinators.cpp.
#include "grammar/json_schema_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.h"
#include "grammar/gbnf_text.h"
#include "grammar/json_schema_primitives.h"

namespace loradesk::grammar::json_schema {
namespace {

// Keywords with no effect on validity.
constexpr std::array kAnnotations = {"title",
                                     "description",
                                     "default",
                                     "examples",
                                     "$schema",
                                     "$id",
                                     "id",
                                     "$comment",
                                     "deprecated",
                                     "readOnly",
                                     "writeOnly",
                                     "discriminator",
                                     "contentEncoding",
                                     "contentMediaType",
                                     "$defs",
                                     "definitions"};
constexpr std::array kHandled = {"type",
                                 "properties",
                                 "required",
                                 "additionalProperties",
                                 "items",
                                 "prefixItems",
                                 "additionalItems",
                                 "minItems",
                                 "maxItems",
                                 "uniqueItems",
                                 "minLength",
                                 "maxLength",
                                 "pattern",
                                 "format",
                                 "minimum",
                                 "maximum",
                                 "exclusiveMinimum",
                                 "exclusiveMaximum",
                                 "enum",
                                 "const",
                                 "anyOf",
                                 "oneOf",
                                 "allOf",
                                 "$ref",
                                 "nullable",
                                 "minProperties",
                                 "maxProperties",
                                 "unevaluatedProperties",
                                 "unevaluatedItems"};

bool contains(const auto& list, std::string_view key) { return std::find(list.begin(), list.end(), key) != list.end(); }

// Without "type", the keywords present say which types the schema is about; none means any value.
std::vector<std::string> inferred_types(const Json& schema) {
    struct Family {
        const char* type;
        std::array<const char*, 6> keys;
    };
    static constexpr std::array kFamilies = {
        Family{"object",
               {"properties", "additionalProperties", "required", "minProperties", "maxProperties",
                "unevaluatedProperties"}},
        Family{"array", {"items", "prefixItems", "minItems", "maxItems", "additionalItems", "uniqueItems"}},
        Family{"string", {"minLength", "maxLength", "pattern", "format", "", ""}},
        Family{"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "", ""}},
    };
    std::vector<std::string> types;
    for (const auto& f : kFamilies)
        for (const char* k : f.keys)
            if (*k && schema.contains(k)) {
                types.emplace_back(f.type);
                break;
            }
    return types;
}

std::string sanitize_hint(std::string_view hint) {
    std::string out;
    for (char c : hint) {
        const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-';
        out += ok ? c : '-';
        if (out.size() >= 48) break;
    }
    return out.empty() ? "x" : out;
}

}  // namespace

bool is_annotation(std::string_view key) { return contains(kAnnotations, key) || key.starts_with("x-"); }

std::vector<std::string> declared_types(const Json& schema, const std::string& path) {
    std::vector<std::string> types;
    auto it = schema.find("type");
    if (it == schema.end()) return types;
    if (it->is_string()) {
        types.push_back(it->get<std::string>());
    } else if (it->is_array() && !it->empty()) {
        for (const auto& t : *it) {
            if (!t.is_string())
                fail(fmt::format("'type' at {} must be a string or an array of strings", path_text(path)));
            types.push_back(t.get<std::string>());
        }
    } else {
        fail(fmt::format("'type' at {} must be a string or a non-empty array of strings", path_text(path)));
    }
    return types;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() + 0 && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

void fail(std::string message) { throw_expected(ErrorCode::invalid_argument, std::move(message)); }

std::string path_text(const std::string& path) { return path.empty() ? "/" : path; }

std::string child_path(const std::string& path, std::string_view key) {
    std::string out = path + "/";
    for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return out;
}

SchemaCompiler::SchemaCompiler(const Json& root, std::string prefix, const SchemaGrammarOptions& options)
    : m_root(root), m_prefix(std::move(prefix)), m_options(options) {}

std::string SchemaCompiler::compile() {
    const std::string root = reserve_rule("root");
    m_ref_rules[""] = root;
    m_unconsumed_refs.push_back("");
    const std::string body = visit(m_root, "", "root", 0);
    m_unconsumed_refs.pop_back();
    define_rule(root, body);
    return text();
}

std::string SchemaCompiler::compile_any_object() {
    define_rule(reserve_rule("root"), primitive("object"));
    return text();
}

std::string SchemaCompiler::text() const {
    std::string out;
    for (const auto& name : m_order) out += fmt::format("{} ::= {}\n", name, m_bodies.at(name));
    return out;
}

std::string SchemaCompiler::reserve_rule(std::string_view hint) {
    const std::string base = m_prefix + sanitize_hint(hint);
    std::string name = base;
    // Primitive names stay free for primitive(); user rules get a numeric suffix instead.
    for (int i = 2; m_names.contains(name) || (primitive_template(name.substr(m_prefix.size())) && hint != "root"); ++i)
        name = fmt::format("{}-{}", base, i);
    m_names.insert(name);
    m_order.push_back(name);
    return name;
}

void SchemaCompiler::define_rule(const std::string& name, std::string body) {
    m_size += name.size() + body.size() + 6;
    if (m_size > kMaxGrammarBytes)
        fail(
            fmt::format("the grammar for this JSON Schema exceeds {} KiB; simplify the schema (fewer enum values, "
                        "smaller bounds, fewer nested alternatives)",
                        kMaxGrammarBytes / 1024));
    m_bodies[name] = std::move(body);
}

std::string SchemaCompiler::add_rule(std::string_view hint, std::string body) {
    std::string name = reserve_rule(hint);
    define_rule(name, std::move(body));
    return name;
}

std::string SchemaCompiler::primitive(std::string_view name) {
    std::string full = m_prefix + std::string(name);
    if (m_bodies.contains(full)) return full;
    const auto tmpl = primitive_template(name);
    if (!tmpl) throw_error(ErrorCode::internal, fmt::format("no primitive grammar rule '{}'", name));
    std::string body(tmpl->body);
    for (std::size_t p; (p = body.find("<S>")) != std::string::npos;)
        body.replace(p, 3, gap().empty() ? "" : gap().substr(1));
    for (std::size_t p; (p = body.find("<P>")) != std::string::npos;) body.replace(p, 3, m_prefix);
    m_names.insert(full);
    m_order.push_back(full);
    define_rule(full, body);
    for (const auto& dep : primitive_references(tmpl->body)) primitive(dep);
    if (tmpl->body.find("<S>") != std::string_view::npos && m_options.any_whitespace) primitive("space");
    return full;
}

std::string SchemaCompiler::gap() {
    if (!m_options.any_whitespace) return "";
    std::string out = " ";
    out += primitive("space");
    return out;
}

std::string SchemaCompiler::token(std::string_view text) {
    if (m_options.any_whitespace) primitive("space");
    return gbnf::literal(text) + gap();
}

void SchemaCompiler::check_keywords(const Json& schema, const std::string& path) const {
    for (const auto& [key, value] : schema.items()) {
        if (is_annotation(key) || contains(kHandled, key)) continue;
        // zod writes propertyNames: {type: string} for records; keys are strings anyway.
        if (key == "propertyNames" && (value == true || value == Json::object() || value == Json{{"type", "string"}}))
            continue;
        fail(fmt::format("unsupported JSON Schema keyword '{}' at {}", key, path_text(path)));
    }
    if (auto it = schema.find("uniqueItems"); it != schema.end() && *it == true)
        fail(
            fmt::format("unsupported JSON Schema keyword 'uniqueItems' at {}: a grammar cannot enforce distinct items "
                        "(vLLM and xgrammar do not either); remove it or set it to false",
                        path_text(path)));
}

std::string SchemaCompiler::visit(const Json& schema, const std::string& path, const std::string& hint, int depth) {
    if (depth > kMaxDepth)
        fail(fmt::format("the JSON Schema nests deeper than {} levels at {}", kMaxDepth, path_text(path)));
    if (schema.is_boolean()) {
        if (schema.get<bool>()) return primitive("value");
        fail(fmt::format("the schema at {} is false: no value can satisfy it", path_text(path)));
    }
    if (!schema.is_object()) fail(fmt::format("the schema at {} must be an object or a boolean", path_text(path)));
    check_keywords(schema, path);
    if (auto it = schema.find("nullable"); it != schema.end() && *it == true) {
        Json inner = schema;
        inner.erase("nullable");
        const std::string value = visit(inner, path, hint, depth + 1);
        return add_rule(hint + "-or-null", fmt::format("{} | {}", value, primitive("null")));
    }
    if (schema.contains("$ref")) return visit_ref(schema, path, depth);
    if (schema.contains("const") || schema.contains("enum")) return visit_values(schema, path, hint);
    if (schema.contains("anyOf") || schema.contains("oneOf")) return visit_any_of(schema, path, hint, depth);
    if (schema.contains("allOf")) return visit_all_of(schema, path, hint, depth);
    std::vector<std::string> types = declared_types(schema, path);
    if (types.empty()) types = inferred_types(schema);
    if (types.empty()) return primitive("value");
    if (types.size() == 1) return visit_typed(schema, types[0], path, hint, depth);
    std::string body;
    for (const auto& t : types)
        body += (body.empty() ? "" : " | ") + visit_typed(schema, t, path, hint + "-" + t, depth);
    return add_rule(hint, body);
}

std::string SchemaCompiler::visit_typed(const Json& schema, std::string_view type, const std::string& path,
                                        const std::string& hint, int depth) {
    if (type == "string") return visit_string(schema, path, hint);
    if (type == "integer") return visit_integer(schema, path, hint);
    if (type == "number") return visit_number(schema, path, hint);
    if (type == "boolean") return primitive("boolean");
    if (type == "null") return primitive("null");
    if (type == "object") return visit_object(schema, path, hint, depth);
    if (type == "array") return visit_array(schema, path, hint, depth);
    fail(fmt::format("unknown JSON Schema type '{}' at {}/type", type, path));
}

std::string SchemaCompiler::visit_ref(const Json& schema, const std::string& path, int depth) {
    for (const auto& [key, value] : schema.items())
        if (key != "$ref" && !is_annotation(key))
            fail(
                fmt::format("unsupported JSON Schema keyword '{}' beside $ref at {}; move it into the referenced "
                            "schema or wrap the $ref in allOf",
                            key, path_text(path)));
    const Json& ref = schema["$ref"];
    if (!ref.is_string() || !ref.get<std::string>().starts_with("#"))
        fail(fmt::format("$ref {} at {}: only local references (#, #/$defs/..., #/definitions/...) are supported",
                         ref.dump(), path_text(path)));
    const std::string pointer = percent_decode(ref.get<std::string>().substr(1));
    if (std::find(m_unconsumed_refs.begin(), m_unconsumed_refs.end(), pointer) != m_unconsumed_refs.end())
        fail(
            fmt::format("$ref '{}' at {} refers back to itself without any JSON in between (a cycle of references "
                        "that can never produce a value)",
                        ref.get<std::string>(), path_text(path)));
    if (auto it = m_ref_rules.find(pointer); it != m_ref_rules.end()) return it->second;
    const Json* target = nullptr;
    try {
        target = &m_root.at(Json::json_pointer(pointer));
    } catch (const std::exception&) {
        fail(fmt::format("$ref '{}' at {} does not resolve to a schema in this document", ref.get<std::string>(),
                         path_text(path)));
    }
    const std::string name = reserve_rule(pointer.substr(pointer.rfind('/') + 1));
    m_ref_rules[pointer] = name;
    m_unconsumed_refs.push_back(pointer);
    std::string body = visit(*target, pointer, name.substr(m_prefix.size()), depth + 1);
    m_unconsumed_refs.pop_back();
    define_rule(name, std::move(body));
    return name;
}

}  // namespace loradesk::grammar::json_schema
