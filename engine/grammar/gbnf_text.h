// Spelling GBNF text (llama.cpp's dialect): literals, character-class members and bounded repetitions.
// Owns only escaping and formatting; what the rules mean is the business of the callers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace loradesk::grammar::gbnf {

// A quoted literal matching the UTF-8 text exactly. Quotes, backslashes and control characters are escaped; other
// characters are written as they are (the dialect reads UTF-8).
std::string literal(std::string_view utf8);

// One member of a character class for the code point, escaped where the class syntax needs it (] ^ - \ and controls).
std::string class_member(char32_t code_point);

// `atom` repeated between min and max times (max nullopt: unbounded), in the shortest form: "", atom, atom?,
// atom*, atom+, atom{m}, atom{m,} or atom{m,n}. `atom` must already be a single term (a name, literal, class or
// parenthesised group).
std::string repeat(std::string_view atom, std::size_t min, std::optional<std::size_t> max);

// Decodes the UTF-8 code point starting at text[pos] and advances pos. Input comes from a parsed JSON document,
// so it is valid UTF-8.
char32_t next_code_point(std::string_view text, std::size_t& pos);

// The UTF-8 encoding of a code point.
std::string utf8(char32_t code_point);

}  // namespace loradesk::grammar::gbnf
