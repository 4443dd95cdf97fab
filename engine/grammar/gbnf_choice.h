// Building blocks for generating GBNF text: literal and class escaping, and the grammar for a choice list
// (vLLM's guided_choice). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ir.h"

namespace loradesk::grammar {

// "..." matching exactly `utf8` (quotes, backslashes and control characters escaped; other UTF-8 kept).
std::string gbnf_literal(std::string_view utf8);
// [...] matching exactly the code points in `ranges` (any ranges; an empty set gives a class matching nothing).
std::string gbnf_class(const std::vector<CpRange>& ranges);
// root ::= "a" | "b" | ...: the output must be exactly one of the choices. No choices: only the empty output.
std::string gbnf_for_choice(const std::vector<std::string>& choices);

}  // namespace loradesk::grammar
