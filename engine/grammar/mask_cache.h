// Caches shared by every matcher on one TokenIndex, keyed by (grammar uid, canonical key):
//  - MaskCache: whole allowed-token masks by stack-set key. JSON keeps coming back to the same few states (inside
//    a string, after a comma), so most masks are a lookup and a copy.
//  - FrameCache: context-independent masks by frame key (the top of one stack, up to the nearest user rule): the
//    tokens that fit without leaving the frame, and the trie nodes where the frame can end and the rest of the
//    token depends on the stack below (xgrammar's adaptive token mask cache, per frame).
// Bounded LRU by bytes; thread-safe (one mutex each, held only for the lookup or insert).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loradesk::grammar {

using TokenMask = std::vector<uint32_t>;

struct FrameMask {
    TokenMask accepted;                                 // tokens that fit within the frame
    std::vector<std::pair<uint32_t, uint32_t>> splits;  // (trie node, depth) where the frame may end
};

inline std::size_t cache_cost(const TokenMask& m) { return m.size() * sizeof(uint32_t); }
inline std::size_t cache_cost(const FrameMask& f) {
    return f.accepted.size() * sizeof(uint32_t) + f.splits.size() * sizeof(f.splits[0]);
}

template <class V>
class LruCache {
  public:
    explicit LruCache(std::size_t max_bytes = std::size_t(64) << 20) : m_max_bytes(max_bytes) {}

    std::shared_ptr<const V> find(uint64_t grammar_uid, std::string_view key) {
        std::string k = full_key(grammar_uid, key);
        std::lock_guard lock(m_mutex);
        auto it = m_index.find(k);
        if (it == m_index.end()) return nullptr;
        m_lru.splice(m_lru.begin(), m_lru, it->second);
        return it->second->value;
    }

    void insert(uint64_t grammar_uid, std::string_view key, std::shared_ptr<const V> value) {
        std::string k = full_key(grammar_uid, key);
        const std::size_t cost = k.size() + cache_cost(*value) + 64;
        std::lock_guard lock(m_mutex);
        if (m_index.count(k)) return;
        m_lru.push_front(Entry{std::move(k), std::move(value), cost});
        m_index.emplace(m_lru.front().key, m_lru.begin());
        m_bytes += cost;
        while (m_bytes > m_max_bytes && m_lru.size() > 1) {
            m_bytes -= m_lru.back().cost;
            m_index.erase(m_lru.back().key);
            m_lru.pop_back();
        }
    }

    std::size_t size() const {
        std::lock_guard lock(m_mutex);
        return m_lru.size();
    }

    void clear() {
        std::lock_guard lock(m_mutex);
        m_index.clear();
        m_lru.clear();
        m_bytes = 0;
    }

  private:
    struct Entry {
        std::string key;
        std::shared_ptr<const V> value;
        std::size_t cost;
    };
    static std::string full_key(uint64_t uid, std::string_view key) {
        std::string k(reinterpret_cast<const char*>(&uid), sizeof uid);
        k += key;
        return k;
    }

    mutable std::mutex m_mutex;
    std::list<Entry> m_lru;  // front = most recent
    std::unordered_map<std::string_view, typename std::list<Entry>::iterator> m_index;
    std::size_t m_bytes = 0;
    std::size_t m_max_bytes;
};

using MaskCache = LruCache<TokenMask>;
using FrameCache = LruCache<FrameMask>;

}  // namespace loradesk::grammar
