// GBNF (llama.cpp's grammar dialect) -> code-point GrammarIr. Syntax and semantic errors (undefined rule, missing
// root, over-limit repetition) come back as a failed Result whose message gives line and column. Checks that need
// the whole grammar (left recursion, rules that never finish) are grammar_compiler's.
#pragma once

#include <string_view>

#include "core/result.h"
#include "grammar/grammar_ir.h"

namespace loradesk::grammar {

Result<GrammarIr> parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace loradesk::grammar
