// The public face of engine/grammar in one include: compile (GBNF, regex, choice lists), cache compiled grammars,
// index a vocabulary once, and run one GrammarMatcher per constrained sequence.
//   auto g = compile_gbnf(text);                       // or GrammarCache::get_or_compile
//   auto index = build_token_index(vocabulary);        // once per tokenizer
//   GrammarMatcher m(g.value(), index);
//   m.fill_next_token_bitmask(words); ... m.accept_token(sampled);
#pragma once

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_choice.h"
#include "grammar/grammar_cache.h"
#include "grammar/grammar_matcher.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/token_index.h"
