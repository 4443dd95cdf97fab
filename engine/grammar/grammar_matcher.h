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
    // unless the vocabulary lacks needed bytes), only EOS ids are set; accept_token(EOS) still returns false there,
    // and the caller ends the sequence as a grammar failure.
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
    // The most that one token allowed by `mask` (this state's mask) lengthens the shortest completion; memoised
    // per state, so a budget check costs a scan of the mask only the first time a state is seen.
    uint32_t max_lengthening(std::span<const uint32_t> mask);
    bool is_eos(int32_t id) const { return m_index->is_eos(id); }

    // The same mask without the shared mask cache: the union over stacks of their frames' context-independent
    // masks (FrameCache) plus, where a frame can end inside a token, a walk of that trie subtree in the real
    // context. Tests compare it with the cached mask and with compute_mask_full_walk.
    void compute_mask_uncached(std::span<uint32_t> words);
    // The mask by walking the whole trie from the current state: no caches at all (the reference and baseline).
    void compute_mask_full_walk(std::span<uint32_t> words);
    // States of the matcher's DFA (about 1 KiB each; bounded by compaction): for benchmarks and diagnostics.
    std::size_t automaton_states() const { return m_automaton.n_states(); }

  private:
    void maybe_compact();
    // Walks trie nodes [begin, end) (a subtree whose parent state is in m_depth_states), setting the bits of
    // tokens that fit.
    void walk_subtree(uint32_t begin, uint32_t end, std::span<uint32_t> words);
    std::shared_ptr<const FrameMask> frame_mask(const std::vector<uint32_t>& chain);
    void finish_mask(std::span<uint32_t> words) const;  // EOS bits
    int32_t walk(std::string_view bytes);               // state after bytes, or kDead

    std::shared_ptr<const CompiledGrammar> m_grammar;
    std::shared_ptr<const TokenIndex> m_index;
    StackAutomaton m_automaton;
    int32_t m_state;
    bool m_terminated = false;
    std::vector<int32_t> m_depth_states;  // scratch for the trie walk
};

}  // namespace loradesk::grammar
