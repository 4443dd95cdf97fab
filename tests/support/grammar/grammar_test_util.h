// Shared by the grammar tests and bench/grammar_bench: a JSON GBNF grammar (llama.cpp's json.gbnf) and a
// helper that says whether a grammar matches a whole string.
#pragma once

#include <string>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_index.h"

namespace loradesk::grammar::test {

inline constexpr std::string_view kJsonGbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

// 1: the grammar matches `text` completely; 0: `text` is a viable prefix only; -1: `text` cannot be extended to a
// match.
inline int match_kind(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
    static const auto empty_index = build_token_index({});
    GrammarMatcher m(g, empty_index);
    if (!m.accept_bytes(text)) return -1;
    return m.can_end() ? 1 : 0;
}

}  // namespace loradesk::grammar::test
