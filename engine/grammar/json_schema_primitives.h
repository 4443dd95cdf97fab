// The fixed GBNF rules that schema grammars build on: JSON whitespace, strings, numbers, any value, and the string
// formats (date-time, email, uuid, ...). Owns their text and length bounds, not when they are used.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loradesk::grammar::json_schema {

// Rule bodies refer to other primitives as "<P>name" and to the whitespace gap as "<S>"; the compiler substitutes
// its rule prefix and " <prefix>space" (or nothing without whitespace).
struct PrimitiveTemplate {
    std::string_view name;
    std::string_view body;
};

// The template of a primitive rule, nullopt for an unknown name.
std::optional<PrimitiveTemplate> primitive_template(std::string_view name);

// Names that `body` refers to through "<P>name".
std::vector<std::string> primitive_references(std::string_view body);

// A supported string format: the primitive rule for its content (without quotes) and the bounds on its length in
// code points, so that minLength/maxLength beside it can be checked to be implied.
struct StringFormat {
    std::string_view rule;  // empty: the format does not constrain (password, binary)
    std::size_t min_length;
    std::size_t max_length;
};
std::optional<StringFormat> string_format(std::string_view format);

// The rule for a format together with a pattern, when the pattern is one that zod writes beside that format and
// the rule is known to satisfy both; nullopt otherwise.
std::optional<std::string_view> format_rule_with_pattern(std::string_view format, std::string_view pattern);

// The supported format names, for error messages.
std::string_view supported_formats();

}  // namespace loradesk::grammar::json_schema
