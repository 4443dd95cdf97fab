#include "grammar/stack_automaton.h"

#include <algorithm>

namespace loradesk::grammar {

using G = CompiledGrammar;

std::size_t StackAutomaton::VecHash::operator()(const std::vector<uint32_t>& v) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
    return std::size_t(h);
}

StackAutomaton::StackAutomaton(std::shared_ptr<const CompiledGrammar> grammar) : m_grammar(std::move(grammar)) {
    reset_tables();
    m_out.clear();
    ++m_generation;
    expand(intern_node(G::kStartPos, 0));
    m_initial = intern_set(m_out);
}

void StackAutomaton::reset_tables() {
    m_nodes.assign({Node{0, 0}, Node{~0u, 0}});  // node 0: the empty stack; node 1: the frame bottom marker
    m_node_ids.clear();
    m_sets.clear();
    m_set_ids.clear();
    m_transitions.clear();
    m_keys.clear();
    m_node_min.assign(2, 0);  // the empty stack and the local-frame bottom are complete
    m_set_min.clear();
    m_set_memo.clear();
    m_seen.assign(2, 0);
    m_generation = 0;
}

uint32_t StackAutomaton::intern_node(uint32_t pos, uint32_t parent) {
    auto [it, inserted] = m_node_ids.try_emplace((uint64_t(pos) << 32) | parent, uint32_t(m_nodes.size()));
    if (inserted) {
        m_nodes.push_back({pos, parent});
        m_seen.push_back(0);
        m_node_min.push_back(kUnsetMin);
    }
    return it->second;
}

int32_t StackAutomaton::intern_set(std::vector<uint32_t> stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.empty() || stacks.size() > kMaxStacks) return kDead;
    auto [it, inserted] = m_set_ids.try_emplace(stacks, int32_t(m_sets.size()));
    if (inserted) {
        m_sets.push_back(std::move(stacks));
        m_transitions.resize(m_transitions.size() + 256, kUnknown);
        m_keys.emplace_back();
        m_set_min.push_back(kUnsetMin);
        m_set_memo.push_back(kUnsetMemo);
    }
    return it->second;
}

void StackAutomaton::expand(uint32_t start) {
    const auto& el = m_grammar->elements;
    m_work.assign(1, start);
    while (!m_work.empty()) {
        uint32_t n = m_work.back();
        m_work.pop_back();
        if (m_seen[n] == m_generation) continue;  // also breaks cycles of nullable tail references
        m_seen[n] = m_generation;
        if (n <= kBottom) {
            m_out.push_back(n);
            continue;
        }
        const Node node = m_nodes[n];
        const uint32_t e = el[node.pos];
        if (G::is_bytes(e)) {
            m_out.push_back(n);
            continue;
        }
        // A rule reference: its continuation goes below (unless it ends the alternative: tail call), then each
        // alternative's first element on top.
        uint32_t rest = G::is_end(el[node.pos + 1]) ? node.parent : intern_node(node.pos + 1, node.parent);
        const uint32_t rule = G::arg(e);
        for (uint32_t i = m_grammar->alt_offsets[rule]; i < m_grammar->alt_offsets[rule + 1]; ++i) {
            uint32_t a = m_grammar->alt_starts[i];
            m_work.push_back(G::is_end(el[a]) ? rest : intern_node(a, rest));
        }
        if (m_out.size() > kMaxStacks) return;
    }
}

int32_t StackAutomaton::compute(int32_t state, uint8_t byte) {
    const auto& el = m_grammar->elements;
    m_out.clear();
    ++m_generation;
    // Indexing (not a range-for over a reference) keeps this safe should expand() ever intern sets.
    const std::size_t n_stacks = m_sets[std::size_t(state)].size();
    for (std::size_t i = 0; i < n_stacks; ++i) {
        uint32_t n = m_sets[std::size_t(state)][i];
        if (n <= kBottom) continue;
        const Node node = m_nodes[n];
        if (!m_grammar->byte_matches(el[node.pos], byte)) continue;
        expand(G::is_end(el[node.pos + 1]) ? node.parent : intern_node(node.pos + 1, node.parent));
        if (m_out.size() > kMaxStacks) return kDead;
    }
    return intern_set(m_out);
}

uint32_t StackAutomaton::min_bytes_to_end(int32_t state) {
    uint32_t& memo = m_set_min[std::size_t(state)];
    if (memo != kUnsetMin) return memo;
    uint32_t best = CompiledGrammar::kNoEnd;
    for (uint32_t top : m_sets[std::size_t(state)]) {
        // A stack's frames below the first already-known node are summed on the way back up (no recursion).
        m_work.clear();
        uint32_t n = top;
        while (m_node_min[n] == kUnsetMin) {
            m_work.push_back(n);
            n = m_nodes[n].parent;
        }
        uint32_t below = m_node_min[n];
        for (auto it = m_work.rbegin(); it != m_work.rend(); ++it) {
            below = std::min(CompiledGrammar::kNoEnd, below + m_grammar->min_suffix[m_nodes[*it].pos]);
            m_node_min[*it] = below;
        }
        best = std::min(best, m_node_min[top]);
    }
    return memo = best;
}

std::vector<uint32_t> StackAutomaton::positions(uint32_t node) const {
    std::vector<uint32_t> out;
    for (uint32_t n = node; n > kBottom; n = m_nodes[n].parent) out.push_back(m_nodes[n].pos);
    return out;
}

const std::string& StackAutomaton::key(int32_t state) {
    std::string& key = m_keys[std::size_t(state)];
    if (!key.empty()) return key;
    std::vector<std::string> stacks;
    for (uint32_t n : m_sets[std::size_t(state)]) {
        auto pos = positions(n);
        std::string s(reinterpret_cast<const char*>(pos.data()), pos.size() * sizeof(uint32_t));
        stacks.push_back(std::move(s));
    }
    std::sort(stacks.begin(), stacks.end());
    for (const auto& s : stacks) {
        key += std::to_string(s.size());  // length prefix keeps the concatenation unambiguous
        key += ':';
        key += s;
    }
    return key;
}

std::vector<uint32_t> StackAutomaton::frame_of(uint32_t node, uint32_t& below) const {
    std::vector<uint32_t> chain;
    uint32_t n = node;
    while (n > kBottom) {
        chain.push_back(m_nodes[n].pos);
        const bool user = m_grammar->user_frame[m_nodes[n].pos];
        n = m_nodes[n].parent;
        if (user) break;
    }
    below = n;
    return chain;
}

int32_t StackAutomaton::local_state(const std::vector<uint32_t>& positions) {
    uint32_t n = kBottom;
    for (auto it = positions.rbegin(); it != positions.rend(); ++it) n = intern_node(*it, n);
    m_out.clear();
    ++m_generation;
    expand(n);
    return intern_set(m_out);
}

int32_t StackAutomaton::state_of_node(uint32_t node) {
    m_out.clear();
    ++m_generation;
    expand(node);
    return intern_set(m_out);
}

int32_t StackAutomaton::compact(int32_t state) {
    std::vector<std::vector<uint32_t>> stacks;
    for (uint32_t n : m_sets[std::size_t(state)]) stacks.push_back(positions(n));
    reset_tables();
    std::vector<uint32_t> ids;
    for (const auto& pos : stacks) {
        uint32_t n = 0;
        for (auto it = pos.rbegin(); it != pos.rend(); ++it) n = intern_node(*it, n);
        ids.push_back(n);
    }
    int32_t id = intern_set(std::move(ids));
    // The start state is rebuilt too, so that reset() keeps working after compaction.
    m_out.clear();
    ++m_generation;
    expand(intern_node(G::kStartPos, 0));
    m_initial = intern_set(m_out);
    return id;
}

}  // namespace loradesk::grammar
