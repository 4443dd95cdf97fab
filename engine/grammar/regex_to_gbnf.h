// ECMAScript/Python-style regular expression -> GBNF whose root matches exactly the strings the regex fully
// matches (guided_regex, JSON Schema "pattern" after the caller decides on anchoring). Supported: literals,
// escapes (\d \w \s \D \W \S \n \t \xHH \uHHHH \u{...} ...), classes with ranges and negation, '.', groups
// ( ), (?: ), (?<name> ), alternation, quantifiers * + ? {m} {m,} {m,n} (lazy forms as greedy), '^' at the
// start and '$' at the end. Anything else (backreferences, lookaround, word boundaries, inline flags, Unicode
// property escapes) is an error naming the construct.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace loradesk::grammar {

Result<std::string> regex_to_gbnf(std::string_view regex);

}  // namespace loradesk::grammar
