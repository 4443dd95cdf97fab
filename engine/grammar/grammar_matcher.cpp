#include "grammar/grammar_matcher.h"

#include <algorithm>

namespace loradesk::grammar {

namespace {
// Past this many DFA states a matcher drops its tables (keeping the current state) to bound memory: one state
// costs about 1 KiB of transitions.
constexpr std::size_t kMaxAutomatonStates = 4096;  // a JSON document uses ~300
constexpr std::size_t kMaxAutomatonNodes = std::size_t(1) << 21;

void set_bit(std::span<uint32_t> words, int32_t id) {
    std::size_t w = std::size_t(id) >> 5;
    if (w < words.size()) words[w] |= 1u << (uint32_t(id) & 31);
}
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenIndex> index)
    : m_grammar(std::move(grammar)),
      m_index(std::move(index)),
      m_automaton(m_grammar),
      m_state(m_automaton.initial()) {}

void GrammarMatcher::maybe_compact() {
    if (m_automaton.n_states() > kMaxAutomatonStates || m_automaton.n_nodes() > kMaxAutomatonNodes)
        m_state = m_automaton.compact(m_state);
}

void GrammarMatcher::walk_subtree(uint32_t begin, uint32_t end, std::span<uint32_t> words) {
    const auto& t = m_index->trie();
    for (uint32_t i = begin; i < end;) {
        const uint32_t d = t.depth[i];
        const int32_t s = m_automaton.next(m_depth_states[d - 1], t.byte[i]);
        if (s == StackAutomaton::kDead) {
            i = t.subtree_end[i];  // no token below this prefix can fit
            continue;
        }
        m_depth_states[d] = s;
        for (uint32_t k = t.token_offsets[i]; k < t.token_offsets[i + 1]; ++k) set_bit(words, t.token_ids[k]);
        ++i;
    }
}

void GrammarMatcher::finish_mask(std::span<uint32_t> words) const {
    const bool any = std::any_of(words.begin(), words.end(), [](uint32_t w) { return w != 0; });
    if (m_terminated || m_automaton.can_end(m_state) || !any)
        for (int32_t id : m_index->vocab().eos_ids) set_bit(words, id);
}

void GrammarMatcher::compute_mask_full_walk(std::span<uint32_t> words) {
    std::fill(words.begin(), words.end(), 0u);
    if (!m_terminated && m_automaton.can_continue(m_state)) {
        maybe_compact();
        m_depth_states.resize(std::size_t(m_index->trie().max_depth) + 1);
        m_depth_states[0] = m_state;
        walk_subtree(0, uint32_t(m_index->trie().byte.size()), words);
    }
    finish_mask(words);
}

std::shared_ptr<const FrameMask> GrammarMatcher::frame_mask(const std::vector<uint32_t>& chain) {
    std::string_view key(reinterpret_cast<const char*>(chain.data()), chain.size() * sizeof(uint32_t));
    FrameCache& cache = m_index->frame_cache();
    if (auto found = cache.find(m_grammar->uid, key)) return found;
    auto fm = std::make_shared<FrameMask>();
    fm->accepted.assign(m_index->n_words(), 0u);
    const auto& t = m_index->trie();
    m_depth_states[0] = m_automaton.local_state(chain);
    const uint32_t n = uint32_t(t.byte.size());
    for (uint32_t i = 0; i < n;) {
        const uint32_t d = t.depth[i];
        const int32_t s = m_automaton.next(m_depth_states[d - 1], t.byte[i]);
        if (s == StackAutomaton::kDead) {
            i = t.subtree_end[i];
            continue;
        }
        m_depth_states[d] = s;
        for (uint32_t k = t.token_offsets[i]; k < t.token_offsets[i + 1]; ++k) set_bit(fm->accepted, t.token_ids[k]);
        if (m_automaton.at_frame_end(s)) {
            // The frame can end after these d bytes: what follows depends on the stack below.
            fm->splits.emplace_back(i, d);
            if (!m_automaton.can_continue(s)) {
                i = t.subtree_end[i];
                continue;
            }
        }
        ++i;
    }
    cache.insert(m_grammar->uid, key, fm);
    return fm;
}

void GrammarMatcher::compute_mask_uncached(std::span<uint32_t> words) {
    std::fill(words.begin(), words.end(), 0u);
    if (!m_terminated && m_automaton.can_continue(m_state)) {
        maybe_compact();
        const auto& t = m_index->trie();
        m_depth_states.resize(std::size_t(t.max_depth) + 1);
        const std::vector<uint32_t> stacks = m_automaton.stacks(m_state);  // a copy: new states may be interned
        for (uint32_t node : stacks) {
            if (node <= 1) continue;  // the empty stack (can_end) expects nothing
            uint32_t below = 0;
            auto fm = frame_mask(m_automaton.frame_of(node, below));
            const std::size_t n = std::min(words.size(), fm->accepted.size());
            for (std::size_t w = 0; w < n; ++w) words[w] |= fm->accepted[w];
            if (fm->splits.empty()) continue;
            const int32_t context = m_automaton.state_of_node(below);
            if (context == StackAutomaton::kDead) continue;
            for (auto [i, d] : fm->splits) {
                m_depth_states[d] = context;
                walk_subtree(i + 1, t.subtree_end[i], words);
            }
        }
    }
    finish_mask(words);
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
    maybe_compact();
    if (m_terminated) {
        compute_mask_uncached(words);
        return;
    }
    MaskCache& cache = m_index->mask_cache();
    const std::string& key = m_automaton.key(m_state);
    if (auto mask = cache.find(m_grammar->uid, key)) {
        std::size_t n = std::min(words.size(), mask->size());
        std::copy_n(mask->begin(), n, words.begin());
        std::fill(words.begin() + std::ptrdiff_t(n), words.end(), 0u);
        return;
    }
    auto mask = std::make_shared<TokenMask>(m_index->n_words());
    compute_mask_uncached(*mask);
    std::size_t n = std::min(words.size(), mask->size());
    std::copy_n(mask->begin(), n, words.begin());
    std::fill(words.begin() + std::ptrdiff_t(n), words.end(), 0u);
    cache.insert(m_grammar->uid, m_automaton.key(m_state), std::move(mask));
}

int32_t GrammarMatcher::walk(std::string_view bytes) {
    maybe_compact();
    int32_t s = m_state;
    for (char c : bytes) {
        s = m_automaton.next(s, uint8_t(c));
        if (s == StackAutomaton::kDead) return s;
    }
    return s;
}

bool GrammarMatcher::accept_token(int32_t id) {
    if (m_terminated) return false;
    if (m_index->is_eos(id)) {
        if (!m_automaton.can_end(m_state)) return false;
        m_terminated = true;
        return true;
    }
    if (!m_index->is_grammar_token(id)) return false;
    int32_t s = walk(m_index->vocab().token_bytes[std::size_t(id)]);
    if (s == StackAutomaton::kDead) return false;
    m_state = s;
    return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (m_terminated) return false;
    int32_t s = walk(bytes);
    if (s == StackAutomaton::kDead) return false;
    m_state = s;
    return true;
}

bool GrammarMatcher::can_end() const { return m_terminated || m_automaton.can_end(m_state); }

bool GrammarMatcher::is_terminated() const {
    return m_terminated || (m_automaton.can_end(m_state) && !m_automaton.can_continue(m_state));
}

uint32_t GrammarMatcher::min_bytes_to_end() { return m_terminated ? 0 : m_automaton.min_bytes_to_end(m_state); }

uint32_t GrammarMatcher::min_bytes_after(int32_t id) {
    if (m_terminated || !m_index->is_grammar_token(id)) return CompiledGrammar::kNoEnd;
    const int32_t s = walk(m_index->vocab().token_bytes[std::size_t(id)]);
    return s == StackAutomaton::kDead ? CompiledGrammar::kNoEnd : m_automaton.min_bytes_to_end(s);
}

uint32_t GrammarMatcher::max_lengthening(std::span<const uint32_t> mask) {
    if (m_terminated) return 0;
    maybe_compact();
    const int32_t state = m_state;
    uint32_t& memo = m_automaton.memo(state);
    if (memo != StackAutomaton::kUnsetMemo) return memo;
    const uint32_t now = m_automaton.min_bytes_to_end(state);
    uint32_t worst = 0;
    for (std::size_t w = 0; w < mask.size(); ++w)
        for (uint32_t bits = mask[w]; bits; bits &= bits - 1) {
            const int32_t id = int32_t(w * 32 + std::size_t(__builtin_ctz(bits)));
            if (!m_index->is_grammar_token(id)) continue;
            const uint32_t after = min_bytes_after(id);
            if (after != CompiledGrammar::kNoEnd && after > now) worst = std::max(worst, after - now);
        }
    // min_bytes_after may have compacted the tables (new states): look the state up again by walking nothing.
    if (m_state == state) m_automaton.memo(m_state) = worst;
    return worst;
}

void GrammarMatcher::reset() {
    m_state = m_automaton.initial();
    m_terminated = false;
}

}  // namespace loradesk::grammar
