// StackAutomaton: a lazily built DFA whose states are sets of pushdown stacks of a CompiledGrammar. A stack is
// interned as a node (element position, parent node) so that equal stacks share one id; a state is the sorted set
// of its stacks' ids. Transitions on each byte are computed on first use and then cost one array read, which is
// what makes walking the vocabulary trie cheap. Not thread-safe: each GrammarMatcher owns one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace loradesk::grammar {

class StackAutomaton {
  public:
    static constexpr int32_t kDead = -1;
    // A set with more stacks than this is treated as dead: only highly ambiguous grammars get there, and the
    // alternative is unbounded time and memory per byte.
    static constexpr std::size_t kMaxStacks = 20000;

    explicit StackAutomaton(std::shared_ptr<const CompiledGrammar> grammar);

    int32_t initial() const { return m_initial; }
    int32_t next(int32_t state, uint8_t byte) {
        int32_t t = m_transitions[std::size_t(state) * 256 + byte];
        if (t == kUnknown) {
            t = compute(state, byte);
            m_transitions[std::size_t(state) * 256 + byte] = t;
        }
        return t;
    }
    // The input so far is a complete sentence (some stack is empty).
    bool can_end(int32_t state) const { return m_sets[std::size_t(state)].front() == 0; }
    // Some stack still expects input.
    bool can_continue(int32_t state) const { return m_sets[std::size_t(state)].back() > kBottom; }
    // A local (frame) state: some stack has popped out of its frame (see local_state).
    bool at_frame_end(int32_t state) const {
        const auto& s = m_sets[std::size_t(state)];
        return s.front() == kBottom || (s.size() > 1 && s[1] == kBottom);
    }

    // Frames: the top of the stack `node` up to (and including) the nearest node in a user rule's alternative.
    // Returns the positions of that chain, top first, and sets `below` to the node under it.
    std::vector<uint32_t> frame_of(uint32_t node, uint32_t& below) const;
    // The state of the chain `positions` (top first) standing on a bottom marker instead of its real context:
    // popping past it shows as at_frame_end().
    int32_t local_state(const std::vector<uint32_t>& positions);
    // The state of the stack `node` after expanding its top (the context a frame returns to).
    int32_t state_of_node(uint32_t node);
    const std::vector<uint32_t>& stacks(int32_t state) const { return m_sets[std::size_t(state)]; }
    // Canonical description of a state, independent of node ids: equal for equal stack sets in any automaton of
    // the same grammar. Keys the shared mask cache.
    const std::string& key(int32_t state);

    // The fewest bytes that complete a sentence from `state` (0 when it can end; CompiledGrammar::kNoEnd when
    // nothing completes it). Memoised per state and stack node.
    uint32_t min_bytes_to_end(int32_t state);
    // A number the matcher keeps per state (kUnsetMin until set): GrammarMatcher memoises its budget bound here,
    // so that it is forgotten with the state when the tables are compacted.
    uint32_t& memo(int32_t state) { return m_set_memo[std::size_t(state)]; }

    std::size_t n_states() const { return m_sets.size(); }
    std::size_t n_nodes() const { return m_nodes.size(); }
    // Forgets every state but `state` (to bound memory); returns its id in the rebuilt tables.
    int32_t compact(int32_t state);

  private:
    static constexpr int32_t kUnknown = -2;

  public:
    static constexpr uint32_t kUnsetMemo = UINT32_MAX;

  private:
    static constexpr uint32_t kUnsetMin = UINT32_MAX;
    static constexpr uint32_t kBottom = 1;  // node 1: the bottom marker of local frame stacks
    struct Node {
        uint32_t pos;     // element the stack expects next
        uint32_t parent;  // node below; 0 is the empty stack
    };
    struct VecHash {
        std::size_t operator()(const std::vector<uint32_t>& v) const noexcept;
    };

    void reset_tables();
    uint32_t intern_node(uint32_t pos, uint32_t parent);
    int32_t intern_set(std::vector<uint32_t> stacks);
    void expand(uint32_t node);  // closure: pushes rule alternatives until each stack expects a byte
    int32_t compute(int32_t state, uint8_t byte);
    std::vector<uint32_t> positions(uint32_t node) const;

    std::shared_ptr<const CompiledGrammar> m_grammar;
    std::vector<Node> m_nodes;
    std::unordered_map<uint64_t, uint32_t> m_node_ids;
    std::vector<std::vector<uint32_t>> m_sets;
    std::unordered_map<std::vector<uint32_t>, int32_t, VecHash> m_set_ids;
    std::vector<int32_t> m_transitions;  // [n_states * 256]
    std::vector<std::string> m_keys;     // lazily filled
    std::vector<uint32_t> m_node_min;    // per node: min_bytes of its stack, kUnset until asked
    std::vector<uint32_t> m_set_min;     // per state, likewise
    std::vector<uint32_t> m_set_memo;    // per state: memo()
    int32_t m_initial = 0;
    // Scratch for compute/expand.
    std::vector<uint32_t> m_seen;
    uint32_t m_generation = 0;
    std::vector<uint32_t> m_work, m_out;
};

}  // namespace loradesk::grammar
