// GrammarMatcher: the per-request state of grammar-constrained decoding (a set of pushdown stacks), the
// allowed-token bitmask for the next step, and advancing by sampled tokens. Owns its StackAutomaton (a lazily
// built DFA over stack sets); shares the CompiledGrammar and the TokenIndex (and its mask cache). Not
// thread-safe: one matcher per sequence, used by one thread at a time. Never throws.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_automaton.h"
#include "grammar/token_index.h"

namespace loradesk::grammar {

class GrammarMatcher {
  public:
    GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenIndex> index);

    // Allowed next tokens as a bitmask: bit (id % 32) of word id / 32; words = (vocab+31)/32. EOS ids are set
    // only when the grammar can end here. When no token at all fits (cannot happen for a well-formed grammar
    // unless the vocabulary lacks needed bytes), only EOS ids are set.
    void fill_next_token_bitmask(std::span<uint32_t> words);
    bool accept_token(int32_t id);        // false (state unchanged) if not allowed; EOS allowed only when accepting
    bool accept_bytes(std::string_view);  // for tests / forced prefixes
    bool can_end() const;                 // the bytes so far are a complete sentence of the grammar
    bool is_terminated() const;           // EOS accepted, or can_end() and no further byte possible
    void reset();

    // Token budgets: the fewest bytes that still complete a sentence (0 when can_end()), and the same after `id`
    // would be accepted (CompiledGrammar::kNoEnd when the grammar refuses it). The state does not change.
    uint32_t min_bytes_to_end();
    uint32_t min_bytes_after(int32_t id);
    bool is_eos(int32_t id) const { return m_index->is_eos(id); }

    // The same mask without the shared cache (tests compare the two; benchmarks time the walk).
    void compute_mask_uncached(std::span<uint32_t> words);

  private:
    void maybe_compact();
    int32_t walk(std::string_view bytes);  // state after bytes, or kDead

    std::shared_ptr<const CompiledGrammar> m_grammar;
    std::shared_ptr<const TokenIndex> m_index;
    StackAutomaton m_automaton;
    int32_t m_state;
    bool m_terminated = false;
    std::vector<int32_t> m_depth_states;  // scratch for the trie walk
};

}  // namespace loradesk::grammar
