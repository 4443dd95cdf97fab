// MaskCache: allowed-token bitmasks by (grammar uid, canonical stack-set key), shared by every matcher that uses
// one TokenIndex. JSON keeps coming back to the same few states (inside a string, after a comma), so most masks
// are a lookup and a copy. Bounded LRU by bytes; thread-safe (one mutex, held only for the lookup).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loradesk::grammar {

using TokenMask = std::vector<uint32_t>;

class MaskCache {
  public:
    explicit MaskCache(std::size_t max_bytes = std::size_t(64) << 20) : m_max_bytes(max_bytes) {}

    std::shared_ptr<const TokenMask> find(uint64_t grammar_uid, std::string_view state_key);
    void insert(uint64_t grammar_uid, std::string_view state_key, std::shared_ptr<const TokenMask> mask);
    std::size_t size() const;
    void clear();

  private:
    struct Entry {
        std::string key;
        std::shared_ptr<const TokenMask> mask;
    };
    static std::string full_key(uint64_t uid, std::string_view state_key);

    mutable std::mutex m_mutex;
    std::list<Entry> m_lru;  // front = most recent
    std::unordered_map<std::string_view, std::list<Entry>::iterator> m_index;
    std::size_t m_bytes = 0;
    std::size_t m_max_bytes;
};

}  // namespace loradesk::grammar
