// The JSON Schema -> GBNF translation behind json_schema_grammar.h: one SchemaCompiler per schema, walking it once
// and writing one rule per composite sub-schema, one per $ref target (which makes recursive schemas work) and the
// JSON primitives it uses. Owns the keyword policy: what is supported, what is an error, and the guards against
// hostile schemas (depth, grammar size, $ref cycles that consume nothing).
//
// Semantics worth knowing:
// - properties come out in schema order; optional ones may be absent; extra keys (additionalProperties true or a
//   schema) come after the listed ones and never spell a listed name (they use unescaped characters only).
// - oneOf is read as anyOf: a document matching two branches satisfies the grammar but fails oneOf.
// - enum / const values are written compactly (no whitespace inside), as JSON serialises them.
// - integers and numbers with bounds get exact digit grammars; numbers with bounds take no exponent. Every number
//   has at most 19 integer and 19 fraction digits and a 2-digit exponent (integer_range_regex.h).
// - maxLength / maxItems above kMaxRepeat generate at most kMaxRepeat; \u escapes exclude surrogates (a pair would
//   count as one character); strings of a format use a subset of it that ajv-formats and zod both accept; a format
//   with a pattern is accepted only for the patterns zod writes beside its formats.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/integer_range_regex.h"
#include "grammar/json_schema_grammar.h"

namespace loradesk::grammar::json_schema {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxDepth = 64;                      // nesting of sub-schemas while compiling
inline constexpr std::size_t kMaxGrammarBytes = 1 << 20;  // total GBNF text
// minItems/minLength above this are errors; maxItems/maxLength above it are lowered to it, which only narrows what
// the grammar generates (the documents stay valid). It matches compile_gbnf's limit per repetition.
inline constexpr std::size_t kMaxRepeat = 10'000;

// Not thread-safe; use one instance per compilation. Throws ExpectedError(invalid_argument) on unsupported or
// malformed schemas.
class SchemaCompiler {
  public:
    SchemaCompiler(const Json& root, std::string prefix, const SchemaGrammarOptions& options);

    // The grammar text, entry rule `<prefix>root` first.
    std::string compile();
    // root ::= any JSON object (response_format json_object).
    std::string compile_any_object();

  private:
    // Every visitor returns a GBNF term (a rule name) matching the JSON texts valid under the sub-schema at `path`
    // (a JSON pointer), followed by the whitespace gap.
    std::string visit(const Json& schema, const std::string& path, const std::string& hint, int depth);
    std::string visit_typed(const Json& schema, std::string_view type, const std::string& path, const std::string& hint,
                            int depth);
    std::string visit_ref(const Json& schema, const std::string& path, int depth);
    std::string visit_values(const Json& schema, const std::string& path, const std::string& hint);
    std::string visit_any_of(const Json& schema, const std::string& path, const std::string& hint, int depth);
    std::string visit_all_of(const Json& schema, const std::string& path, const std::string& hint, int depth);
    std::string visit_string(const Json& schema, const std::string& path, const std::string& hint);
    std::string visit_pattern(const Json& schema, const std::string& path, const std::string& hint);
    std::string visit_integer(const Json& schema, const std::string& path, const std::string& hint);
    std::string visit_number(const Json& schema, const std::string& path, const std::string& hint);
    std::string visit_array(const Json& schema, const std::string& path, const std::string& hint, int depth);
    std::string visit_object(const Json& schema, const std::string& path, const std::string& hint, int depth);
    std::string extra_key_rule(const std::vector<std::string>& listed, const std::string& hint);

    void check_keywords(const Json& schema, const std::string& path) const;
    std::optional<std::size_t> count_keyword(const Json& schema, const char* key, const std::string& path) const;
    std::pair<std::optional<NumberBound>, std::optional<NumberBound>> read_bounds(const Json& schema,
                                                                                  const std::string& path,
                                                                                  bool integer) const;

    // Rules and text.
    std::string text() const;  // every rule, in the order they were reserved
    std::string reserve_rule(std::string_view hint);
    void define_rule(const std::string& name, std::string body);
    std::string add_rule(std::string_view hint, std::string body);
    std::string primitive(std::string_view name);
    std::string gap();                         // " <prefix>space", or "" without whitespace
    std::string token(std::string_view text);  // a literal followed by the gap

    const Json& m_root;
    std::string m_prefix;
    SchemaGrammarOptions m_options;
    std::vector<std::string> m_order;
    std::unordered_map<std::string, std::string> m_bodies;
    std::unordered_set<std::string> m_names;
    std::size_t m_size = 0;
    std::unordered_map<std::string, std::string> m_ref_rules;  // JSON pointer -> rule name
    // $ref targets entered since the grammar last had to consume a character: meeting one again is left recursion.
    std::vector<std::string> m_unconsumed_refs;
};

[[noreturn]] void fail(std::string message);
bool is_annotation(std::string_view key);  // keywords without effect on validity (title, description, x-...)
std::vector<std::string> declared_types(const Json& schema, const std::string& path);  // "type" as a list
std::string percent_decode(std::string_view s);                         // the URI-fragment escapes of a $ref
std::string path_text(const std::string& path);                         // "/" for the root
std::string child_path(const std::string& path, std::string_view key);  // escapes ~ and / per RFC 6901

}  // namespace loradesk::grammar::json_schema
