#include "grammar/token_index.h"

#include <algorithm>

namespace loradesk::grammar {

TokenIndex::TokenIndex(Vocabulary vocab) : m_vocab(std::move(vocab)) {
    const std::size_t n = m_vocab.token_bytes.size();
    m_vocab.special.resize(n, 0);
    m_is_eos.assign(n, 0);
    for (int32_t id : m_vocab.eos_ids)
        if (id >= 0 && std::size_t(id) < n) m_is_eos[std::size_t(id)] = 1;
    m_grammar_token.assign(n, 0);
    std::vector<int32_t> order;
    for (std::size_t i = 0; i < n; ++i) {
        if (m_vocab.special[i] || m_is_eos[i] || m_vocab.token_bytes[i].empty()) continue;
        m_grammar_token[i] = 1;
        order.push_back(int32_t(i));
    }
    // Sorted byte strings give the trie's preorder directly; equal strings share a node.
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const auto& sa = m_vocab.token_bytes[std::size_t(a)];
        const auto& sb = m_vocab.token_bytes[std::size_t(b)];
        return sa != sb ? sa < sb : a < b;
    });
    Trie& t = m_trie;
    std::vector<uint32_t> path;  // node index at each depth of the current string
    const std::string* prev = nullptr;
    t.token_offsets.push_back(0);
    for (int32_t id : order) {
        const std::string& s = m_vocab.token_bytes[std::size_t(id)];
        if (prev && *prev == s) {  // same bytes as the last token: same (last created) node
            t.token_ids.push_back(id);
            t.token_offsets.back() = uint32_t(t.token_ids.size());
            continue;
        }
        std::size_t common = 0;
        if (prev) {
            auto mm = std::mismatch(prev->begin(), prev->end(), s.begin(), s.end());
            common = std::size_t(mm.first - prev->begin());
        }
        while (path.size() > common) {
            t.subtree_end[path.back()] = uint32_t(t.byte.size());
            path.pop_back();
        }
        for (std::size_t d = common; d < s.size(); ++d) {
            path.push_back(uint32_t(t.byte.size()));
            t.byte.push_back(uint8_t(s[d]));
            t.depth.push_back(uint32_t(d + 1));
            t.subtree_end.push_back(0);
            t.token_offsets.push_back(uint32_t(t.token_ids.size()));
        }
        t.token_ids.push_back(id);
        t.token_offsets.back() = uint32_t(t.token_ids.size());
        t.max_depth = std::max(t.max_depth, uint32_t(s.size()));
        prev = &s;
    }
    for (uint32_t node : path) t.subtree_end[node] = uint32_t(t.byte.size());
}

std::shared_ptr<const TokenIndex> build_token_index(Vocabulary vocab) {
    return std::make_shared<const TokenIndex>(std::move(vocab));
}

}  // namespace loradesk::grammar
