#include "grammar/grammar_cache.h"

namespace loradesk::grammar {

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get_or_compile(std::string_view gbnf,
                                                                            std::string_view root) {
    // Root first with its length, so that (text, root) pairs cannot collide.
    std::string key = std::to_string(root.size()) + ':' + std::string(root) + std::string(gbnf);
    {
        std::lock_guard lock(m_mutex);
        if (auto it = m_index.find(key); it != m_index.end()) {
            m_lru.splice(m_lru.begin(), m_lru, it->second);
            return it->second->grammar;
        }
    }
    // Compile outside the lock: two threads may compile the same text once each, which is harmless.
    auto compiled = compile_gbnf(gbnf, root);
    if (!compiled.ok()) return compiled;
    std::lock_guard lock(m_mutex);
    if (auto it = m_index.find(key); it != m_index.end()) return it->second->grammar;
    m_lru.push_front(Entry{std::move(key), compiled.value()});
    m_index.emplace(m_lru.front().key, m_lru.begin());
    while (m_lru.size() > m_capacity) {
        m_index.erase(m_lru.back().key);
        m_lru.pop_back();
    }
    return compiled;
}

std::size_t GrammarCache::size() const {
    std::lock_guard lock(m_mutex);
    return m_lru.size();
}

}  // namespace loradesk::grammar
