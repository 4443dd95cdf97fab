// Added tokens (tokenizer.json "added_tokens"): matched in the text before pre-tokenization with
// leftmost-longest semantics, honouring lstrip, rstrip and single_word like HF's AddedVocabulary.
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loradesk::tokenizer {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
    bool normalized = false;
};

// One piece of the input: either an added token (id >= 0) or plain text to tokenize (id < 0).
struct TextSplit {
    std::size_t begin = 0, end = 0;
    int32_t id = -1;
};

class AddedTokenMatcher {
  public:
    AddedTokenMatcher() = default;
    // `patterns` are the strings to look for (the token contents, normalized when the token is).
    AddedTokenMatcher(std::vector<AddedToken> tokens, const std::vector<std::string>& patterns);

    bool empty() const { return m_tokens.empty(); }
    // Splits text into added tokens and the gaps between them (gaps may be empty-free; no empty splits).
    std::vector<TextSplit> split(std::string_view text) const;

  private:
    // Longest pattern starting at `pos`: index into m_tokens, or -1.
    int longest_at(std::string_view text, std::size_t pos, std::size_t* length) const;

    std::vector<AddedToken> m_tokens;
    // Byte trie: node -> (byte -> child) packed in one map; m_terminal[node] = token index or -1.
    std::unordered_map<uint64_t, int32_t> m_edges;
    std::vector<int32_t> m_terminal{-1};
    bool m_first_byte[256] = {};
};

}  // namespace loradesk::tokenizer
