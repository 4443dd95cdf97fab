// tokenizer.json "model" of type BPE: vocab, merges (both "a b" and ["a","b"] encodings), ignore_merges,
// byte_fallback (<0xNN>), unk_token/fuse_unk, continuing_subword_prefix/end_of_word_suffix, and a
// sharded per-word cache. Merging is rank-ordered with a heap over a linked list of symbols, so long
// words cost O(n log n). Immutable after loading except the cache, which is internally locked:
// tokenize() is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loradesk::tokenizer {

// Transparent hashing so lookups take string_view without allocating.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using VocabMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
  public:
    // `model` is the tokenizer.json "model" object. Throws ExpectedError for non-BPE types (naming what
    // is supported) and for malformed vocab/merges.
    static std::unique_ptr<BpeModel> from_json(const nlohmann::json& model);

    // Appends the ids of one pre-token.
    void tokenize(std::string_view word, std::vector<int32_t>& out) const;

    std::optional<int32_t> token_to_id(std::string_view token) const;
    // Empty string_view when the id is not in the model vocab.
    std::string_view id_to_token(int32_t id) const;
    // One past the largest id in the vocab.
    int32_t vocab_size() const { return int32_t(m_id_to_token.size()); }

  private:
    struct Merge {
        int32_t rank;
        int32_t new_id;
    };
    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
    void merge_word(std::string_view word, std::vector<int32_t>& out) const;
    void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;

    VocabMap m_vocab;
    std::vector<std::string> m_id_to_token;
    std::unordered_map<uint64_t, Merge> m_merges;
    std::optional<int32_t> m_unk_id;
    std::string m_continuing_prefix, m_end_suffix;
    bool m_fuse_unk = false, m_byte_fallback = false, m_ignore_merges = false;
    std::array<int32_t, 256> m_byte_ids{};  // <0xNN> ids, -1 where absent

    static constexpr std::size_t kCacheShards = 16;
    static constexpr std::size_t kCacheShardCapacity = 4096;
    static constexpr std::size_t kMaxCachedWordBytes = 128;
    struct CacheShard {
        std::mutex mutex;
        std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
    };
    mutable std::array<CacheShard, kCacheShards> m_cache;
};

}  // namespace loradesk::tokenizer
