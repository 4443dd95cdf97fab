// Vocabulary and TokenIndex: a tokenizer's tokens as the grammar sees them (exact bytes), arranged once per
// vocabulary as a byte trie in depth-first order so that a mask is one linear pass that skips dead subtrees.
// Also holds the mask caches shared by all matchers on this vocabulary. Immutable apart from that cache, which is
// thread-safe; share one index per tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/mask_cache.h"

namespace loradesk::grammar {

// A tokenizer's vocabulary as the grammar sees it: token id -> the exact bytes it decodes to (byte-level BPE
// bytes, SentencePiece '▁' already turned into ' ', byte-fallback <0xNN> into that byte). special[id] = a
// control/special token (never allowed by a grammar; EOS is handled separately).
struct Vocabulary {
    std::vector<std::string> token_bytes;
    std::vector<uint8_t> special;
    std::vector<int32_t> eos_ids;
};

class TokenIndex {
  public:
    explicit TokenIndex(Vocabulary vocab);

    std::size_t vocab_size() const { return m_vocab.token_bytes.size(); }
    std::size_t n_words() const { return (vocab_size() + 31) / 32; }
    const Vocabulary& vocab() const { return m_vocab; }
    bool is_eos(int32_t id) const { return id >= 0 && std::size_t(id) < m_is_eos.size() && m_is_eos[std::size_t(id)]; }
    // Tokens a grammar may allow: not special, not EOS, not empty.
    bool is_grammar_token(int32_t id) const {
        return id >= 0 && std::size_t(id) < m_grammar_token.size() && m_grammar_token[std::size_t(id)];
    }
    MaskCache& mask_cache() const { return m_cache; }
    FrameCache& frame_cache() const { return m_frames; }

    // The trie in depth-first preorder: node i has byte[i] on the edge from its parent, depth[i] (root's children
    // are 1), subtree_end[i] (first node after its subtree) and the tokens ending there,
    // token_ids[token_offsets[i] .. token_offsets[i + 1]).
    struct Trie {
        std::vector<uint8_t> byte;
        std::vector<uint32_t> depth;
        std::vector<uint32_t> subtree_end;
        std::vector<uint32_t> token_offsets;
        std::vector<int32_t> token_ids;
        uint32_t max_depth = 0;
    };
    const Trie& trie() const { return m_trie; }

  private:
    Vocabulary m_vocab;
    std::vector<uint8_t> m_is_eos;
    std::vector<uint8_t> m_grammar_token;
    Trie m_trie;
    mutable MaskCache m_cache;
    mutable FrameCache m_frames;
};

std::shared_ptr<const TokenIndex> build_token_index(Vocabulary vocab);

}  // namespace loradesk::grammar
