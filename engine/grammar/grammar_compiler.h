// GrammarIr -> CompiledGrammar: drops alternatives that can never finish, rejects left recursion (it would make
// the pushdown stacks grow without consuming input), and lowers code-point classes to UTF-8 byte sequences.
#pragma once

#include <memory>

#include "core/result.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_ir.h"

namespace loradesk::grammar {

Result<std::shared_ptr<const CompiledGrammar>> compile_ir(GrammarIr ir);

}  // namespace loradesk::grammar
