// PrefixCache: a page-granular radix tree of cached KV, one tree (namespace) per adapter digest
// ("" = the base model). Only full pages are cached; a sequence's last partial page is never shared.
// The tree holds one PagePool reference per node; sequences lock the path they use, so locked pages
// are never evicted. Unlocked leaves are evicted LRU when the pool runs out. It owns bookkeeping only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/page_pool.h"

namespace loradesk::kv {

struct PrefixNode;       // opaque outside prefix_cache.cpp
struct PrefixNamespace;  // one tree: a digest's live cache, or a retired one waiting for its last lock

struct PrefixMatch {
    PrefixNode* lock = nullptr;  // deepest matched node (the namespace root when nothing matched), locked
    std::vector<int32_t> pages;  // matched pages, one PagePool reference each now owned by the caller
    int n_tokens = 0;            // pages.size() * page_size
};

struct NamespaceStats {
    int64_t hit_tokens = 0;  // prompt tokens served from the cache, cumulative
    int64_t lookups = 0;     // acquire() calls, cumulative
    int pages_held = 0;      // cached pages now (live and retired trees of this digest)
};

// Not thread-safe: the engine loop thread owns it.
class PrefixCache {
  public:
    explicit PrefixCache(PagePool& pool);
    ~PrefixCache();
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    int page_size() const { return m_pool.page_size(); }

    // Longest cached full-page prefix of `tokens` in namespace `ns`, without side effects.
    int match_length(const std::string& ns, std::span<const int32_t> tokens) const;
    // Matches like match_length, locks the matched path (always at least the root, so the handle names
    // the namespace instance), takes a page reference per matched page for the caller, counts the hit.
    PrefixMatch acquire(const std::string& ns, std::span<const int32_t> tokens);
    // Caches the full pages of a sequence beyond its locked node: `tokens` and `pages` are the sequence's
    // whole token list and page table (page i holds tokens [i*page_size, (i+1)*page_size)). Pages already
    // cached under the same tokens are kept (the sequence's copy stays private). Moves the lock to the
    // deepest node and returns it. A retired namespace (evicted adapter) caches nothing more.
    PrefixNode* extend(PrefixNode* locked, std::span<const int32_t> tokens, std::span<const int32_t> pages);
    // Ends a sequence's use of its locked path. Nodes of a retired namespace are freed as they unlock.
    void release(PrefixNode* locked);
    // Number of full pages the node's path covers (0 for a root).
    static int depth(const PrefixNode* node);
    static const std::string& namespace_of(const PrefixNode* node);

    // Evicts unlocked leaves, least recently used first, until n_pages pages went back to the pool or
    // nothing is evictable. Returns the number freed.
    int evict(int n_pages);
    // Drops the namespace: unlocked pages are freed now, locked ones when their sequences release them;
    // later acquires of `ns` start a fresh, empty namespace. Idempotent; unknown names are a no-op.
    void evict_namespace(const std::string& ns);
    // evict_namespace for every namespace.
    void clear();

    NamespaceStats stats(const std::string& ns) const;
    std::vector<std::string> namespaces() const;  // live namespaces, sorted
    int n_cached_pages() const { return m_cached_pages; }
    int n_evictable_pages() const { return m_unlocked_pages; }

  private:
    PrefixNamespace* live(const std::string& ns) const;
    PrefixNamespace& live_or_create(const std::string& ns);
    void lock_path(PrefixNode* node);
    void unlock_path(PrefixNode* node);
    void lru_add(PrefixNode* node);
    void lru_remove(PrefixNode* node);
    void free_node(PrefixNode* node);  // a leaf, unlocked; frees its page, updates the parent
    void prune_retired(PrefixNode* node);
    void maybe_drop_namespace(PrefixNamespace* ns);
    void retire(PrefixNamespace* ns);

    PagePool& m_pool;
    std::unordered_map<std::string, std::unique_ptr<PrefixNamespace>> m_live;
    std::map<PrefixNamespace*, std::unique_ptr<PrefixNamespace>> m_retired;
    std::unordered_map<std::string, NamespaceStats> m_stats;
    std::set<std::pair<uint64_t, PrefixNode*>> m_lru;  // evictable leaves by last use
    uint64_t m_tick = 0;
    int m_cached_pages = 0;
    int m_unlocked_pages = 0;
};

}  // namespace loradesk::kv
