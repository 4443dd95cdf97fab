#include "grammar/mask_cache.h"

namespace loradesk::grammar {

std::string MaskCache::full_key(uint64_t uid, std::string_view state_key) {
    std::string k(reinterpret_cast<const char*>(&uid), sizeof uid);
    k += state_key;
    return k;
}

std::shared_ptr<const TokenMask> MaskCache::find(uint64_t grammar_uid, std::string_view state_key) {
    std::string k = full_key(grammar_uid, state_key);
    std::lock_guard lock(m_mutex);
    auto it = m_index.find(k);
    if (it == m_index.end()) return nullptr;
    m_lru.splice(m_lru.begin(), m_lru, it->second);
    return it->second->mask;
}

void MaskCache::insert(uint64_t grammar_uid, std::string_view state_key, std::shared_ptr<const TokenMask> mask) {
    std::string k = full_key(grammar_uid, state_key);
    const std::size_t cost = k.size() + mask->size() * sizeof(uint32_t) + 64;
    std::lock_guard lock(m_mutex);
    if (m_index.count(k)) return;
    m_lru.push_front(Entry{std::move(k), std::move(mask)});
    m_index.emplace(m_lru.front().key, m_lru.begin());
    m_bytes += cost;
    while (m_bytes > m_max_bytes && m_lru.size() > 1) {
        const Entry& last = m_lru.back();
        m_bytes -= last.key.size() + last.mask->size() * sizeof(uint32_t) + 64;
        m_index.erase(last.key);
        m_lru.pop_back();
    }
}

std::size_t MaskCache::size() const {
    std::lock_guard lock(m_mutex);
    return m_lru.size();
}

void MaskCache::clear() {
    std::lock_guard lock(m_mutex);
    m_index.clear();
    m_lru.clear();
    m_bytes = 0;
}

}  // namespace loradesk::grammar
