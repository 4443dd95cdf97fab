// SchemaCompiler for arrays (items, tuples, item counts) and objects (ordered properties with optional ones,
// additional properties). Inside a container the grammar has consumed "[" or "{", so $ref recursion from here on
// is not left recursion: both visitors clear the unconsumed-ref stack for their children.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "grammar/gbnf_text.h"
#include "grammar/json_schema_compiler.h"

namespace loradesk::grammar::json_schema {
namespace {

// Restores the unconsumed-$ref stack when a container visitor returns.
class ConsumedScope {
  public:
    explicit ConsumedScope(std::vector<std::string>& stack) : m_stack(stack), m_saved(std::move(stack)) {
        m_stack.clear();
    }
    ~ConsumedScope() { m_stack = std::move(m_saved); }
    ConsumedScope(const ConsumedScope&) = delete;
    ConsumedScope& operator=(const ConsumedScope&) = delete;

  private:
    std::vector<std::string>& m_stack;
    std::vector<std::string> m_saved;
};

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(sep) : "") + parts[i];
    return out;
}

}  // namespace

std::string SchemaCompiler::visit_array(const Json& schema, const std::string& path, const std::string& hint,
                                        int depth) {
    ConsumedScope scope(m_unconsumed_refs);
    const std::size_t min_items = count_keyword(schema, "minItems", path).value_or(0);
    const auto max_items = count_keyword(schema, "maxItems", path);
    if (max_items && min_items > *max_items) fail(fmt::format("minItems is above maxItems at {}", path_text(path)));
    // Tuples: prefixItems (2020-12) or an array under items (draft 4-7), then the rest.
    const Json* tuple = nullptr;
    const Json* rest = nullptr;
    std::string tuple_key, rest_key;
    if (auto it = schema.find("prefixItems"); it != schema.end()) {
        tuple = &*it, tuple_key = "prefixItems";
        if (auto r = schema.find("items"); r != schema.end()) rest = &*r, rest_key = "items";
    } else if (auto it = schema.find("items"); it != schema.end() && it->is_array()) {
        tuple = &*it, tuple_key = "items";
        if (auto r = schema.find("additionalItems"); r != schema.end()) rest = &*r, rest_key = "additionalItems";
    } else if (it != schema.end()) {
        rest = &*it, rest_key = "items";
    }
    if (tuple && !tuple->is_array()) fail(fmt::format("'{}' at {} must be an array", tuple_key, path_text(path)));
    if (auto it = schema.find("unevaluatedItems"); it != schema.end() && !rest && *it != true) rest = &*it;
    std::vector<std::string> elements;
    if (tuple)
        for (std::size_t i = 0; i < tuple->size(); ++i)
            elements.push_back(visit((*tuple)[i], fmt::format("{}/{}/{}", path, tuple_key, i),
                                     fmt::format("{}-{}", hint, i), depth + 1));
    std::string rest_rule;
    if (!rest || *rest != false) {
        rest_rule = rest ? visit(*rest, path + "/" + rest_key, hint + "-item", depth + 1) : primitive("value");
    }
    const std::size_t k = elements.size();
    if (rest_rule.empty() && min_items > k)
        fail(fmt::format("minItems at {} asks for more items than the tuple allows", path_text(path)));
    const std::string comma = token(",");
    // Positions k.. hold rest items; positions 1..k-1 tuple items, each optional once minItems is met.
    std::string tail;
    if (!rest_rule.empty() && (!max_items || *max_items > k) && k > 0) {
        const std::size_t lo = min_items > k ? min_items - k : 0;
        const auto hi = max_items ? std::optional<std::size_t>(*max_items - k) : std::nullopt;
        tail = gbnf::repeat(fmt::format("( {} {} )", comma, rest_rule), lo, hi);
    }
    for (std::size_t i = k; i-- > 1;) {
        if (max_items && i >= *max_items) continue;
        std::string item = fmt::format("{} {}{}", comma, elements[i], tail.empty() ? "" : " " + tail);
        tail = i >= min_items ? fmt::format("( {} )?", item) : item;
    }
    std::string body;
    if (max_items && *max_items == 0) {
        body = "";
    } else if (k > 0) {
        body = elements[0] + (tail.empty() ? "" : " " + tail);
    } else if (!rest_rule.empty()) {
        const std::size_t lo = min_items > 1 ? min_items - 1 : 0;
        const auto hi = max_items ? std::optional<std::size_t>(*max_items - 1) : std::nullopt;
        const std::string more = gbnf::repeat(fmt::format("( {} {} )", comma, rest_rule), lo, hi);
        body = rest_rule + (more.empty() ? "" : " " + more);
    }
    if (!body.empty() && min_items == 0) body = fmt::format("( {} )?", body);
    return add_rule(hint, fmt::format("{} {}{}{}", token("["), body, body.empty() ? "" : " ", token("]")));
}

std::string SchemaCompiler::visit_object(const Json& schema, const std::string& path, const std::string& hint,
                                         int depth) {
    ConsumedScope scope(m_unconsumed_refs);
    static const Json kEmpty = Json::object();
    auto props_it = schema.find("properties");
    const Json& props = props_it == schema.end() ? kEmpty : *props_it;
    if (!props.is_object()) fail(fmt::format("'properties' at {} must be an object", path_text(path)));
    std::vector<std::string> required;
    if (auto it = schema.find("required"); it != schema.end()) {
        if (!it->is_array()) fail(fmt::format("'required' at {} must be an array of strings", path_text(path)));
        for (const auto& r : *it) {
            if (!r.is_string()) fail(fmt::format("'required' at {} must be an array of strings", path_text(path)));
            if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
                required.push_back(r.get<std::string>());
        }
    }
    // Extra keys: additionalProperties, else unevaluatedProperties (the same thing without allOf), else the default.
    Json additional = !m_options.strict;
    if (auto it = schema.find("additionalProperties"); it != schema.end()) {
        additional = *it;
    } else if (auto u = schema.find("unevaluatedProperties"); u != schema.end()) {
        if (!u->is_boolean())
            fail(fmt::format("unsupported JSON Schema keyword 'unevaluatedProperties' at {} (only true or false)",
                             path_text(path)));
        additional = *u;
    }
    const bool extra_allowed = additional != false;

    struct Entry {
        std::string name;
        std::string kv;
        bool required;
    };
    std::vector<Entry> entries;
    auto is_required = [&](const std::string& name) {
        return m_options.strict || std::find(required.begin(), required.end(), name) != required.end();
    };
    auto kv_rule = [&](const std::string& name, const Json& sub, const std::string& sub_path) {
        const std::string value = visit(sub, sub_path, hint + "-" + name, depth + 1);
        return add_rule(hint + "-" + name + "-kv",
                        fmt::format("{} {} {}", token(Json(name).dump()), token(":"), value));
    };
    for (const auto& [name, sub] : props.items())
        entries.push_back({name, kv_rule(name, sub, child_path(path + "/properties", name)), is_required(name)});
    // Required names that are not listed must appear as extra keys; they come after the listed ones.
    for (const auto& name : required) {
        if (props.contains(name)) continue;
        if (!extra_allowed)
            fail(
                fmt::format("required property '{}' at {} is not in properties and additionalProperties is false, so "
                            "no object can satisfy the schema",
                            name, path_text(path)));
        entries.push_back({name, kv_rule(name, additional, path + "/additionalProperties"), true});
    }
    std::size_t n_required = 0;
    for (const auto& e : entries) n_required += e.required;
    if (auto min = count_keyword(schema, "minProperties", path); min && *min > n_required)
        fail(
            fmt::format("unsupported JSON Schema keyword 'minProperties' at {}: only values up to the number of "
                        "required properties ({}) can be enforced; mark properties required instead",
                        path_text(path), n_required));
    if (auto max = count_keyword(schema, "maxProperties", path); max && (extra_allowed || *max < entries.size()))
        fail(
            fmt::format("unsupported JSON Schema keyword 'maxProperties' at {}: only values that are at least the "
                        "number of properties, with additionalProperties false, can be enforced",
                        path_text(path)));

    std::string extra_tail;  // "( , extra-kv )*" after the listed properties
    std::string extra_kv;
    if (extra_allowed) {
        std::vector<std::string> names;
        for (const auto& e : entries) names.push_back(e.name);
        const std::string value = visit(additional, path + "/additionalProperties", hint + "-extra", depth + 1);
        extra_kv =
            add_rule(hint + "-extra-kv", fmt::format("{} {} {}", extra_key_rule(names, hint), token(":"), value));
        extra_tail = fmt::format("( {} {} )*", token(","), extra_kv);
    }
    // rest[i]: what may follow once some property before i was written; every item carries its comma, so the
    // grammar reads each spelling one way. Alternative i starts the object with property i (all before it absent).
    const std::size_t n = entries.size();
    std::size_t first_required = n;
    for (std::size_t i = 0; i < n; ++i)
        if (entries[i].required) {
            first_required = i;
            break;
        }
    std::vector<std::string> rest(n + 1);
    rest[n] = extra_tail;
    for (std::size_t i = n; i-- > 1;) {
        std::string item = fmt::format("{} {}", token(","), entries[i].kv);
        if (!entries[i].required) item = fmt::format("( {} )?", item);
        std::string seq = rest[i + 1].empty() ? item : item + " " + rest[i + 1];
        // Alternatives refer to rest[1..first_required + 1]; naming those keeps the grammar linear in size.
        rest[i] = i <= first_required + 1 ? add_rule(fmt::format("{}-rest-{}", hint, i), seq) : seq;
    }
    std::vector<std::string> alternatives;
    for (std::size_t i = 0; i < n && i <= first_required; ++i)
        alternatives.push_back(entries[i].kv + (rest[i + 1].empty() ? "" : " " + rest[i + 1]));
    if (first_required == n && extra_allowed) alternatives.push_back(extra_kv + " " + extra_tail);
    std::string body = join(alternatives, " | ");
    if (!body.empty()) body = "( " + body + (first_required == n ? " )?" : " )");
    return add_rule(hint, fmt::format("{} {}{}{}", token("{"), body, body.empty() ? "" : " ", token("}")));
}

// Keys of extra properties: any unescaped string except the listed names, as a trie whose every node either ends,
// follows a listed name's next character, or leaves the trie with any other character.
std::string SchemaCompiler::extra_key_rule(const std::vector<std::string>& listed, const std::string& hint) {
    constexpr std::string_view kQuote = R"("\"")";
    if (listed.empty()) return primitive("string");
    struct Node {
        std::map<char32_t, int> next;
        bool terminal = false;
    };
    std::vector<Node> trie(1);
    for (const auto& name : listed) {
        // Names that need escapes cannot be spelled with unescaped characters anyway.
        if (std::any_of(name.begin(), name.end(),
                        [](char c) { return c == '"' || c == '\\' || (unsigned char)c < 0x20; }))
            continue;
        int node = 0;
        for (std::size_t pos = 0; pos < name.size();) {
            const char32_t cp = gbnf::next_code_point(name, pos);
            auto [it, inserted] = trie[node].next.emplace(cp, static_cast<int>(trie.size()));
            if (inserted) trie.emplace_back();
            node = it->second;
        }
        trie[node].terminal = true;
    }
    const std::string plain = R"([^"\\\x00-\x1F])";
    std::function<std::string(int)> expr = [&](int node) {
        std::vector<std::string> alts;
        std::string excluded = R"("\\\x00-\x1F)";
        for (const auto& [cp, child] : trie[node].next) {
            alts.push_back(fmt::format("{} {}", gbnf::literal(gbnf::utf8(cp)), expr(child)));
            excluded += gbnf::class_member(cp);
        }
        alts.push_back(fmt::format("[^{}] {}*", excluded, plain));
        const std::string group = "( " + join(alts, " | ") + " )";
        return trie[node].terminal ? group : group + "?";
    };
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint + "-extra-key", fmt::format("{} {} {}{}", kQuote, expr(0), kQuote, gap()));
}

}  // namespace loradesk::grammar::json_schema
