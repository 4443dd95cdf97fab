// PrefixCache: radix tree nodes (one full page each), namespaces, locking, LRU eviction and the
// retire-then-free path used when an adapter is unloaded.
#include "kv/prefix_cache.h"

#include <algorithm>

#include "core/error.h"

namespace loradesk::kv {

namespace {

// Orders page keys and lets a token span look up a stored key without copying it.
struct KeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
};

}  // namespace

struct PrefixNode {
    std::vector<int32_t> key;  // the page's tokens; empty for a root
    int32_t page = -1;
    PrefixNode* parent = nullptr;
    PrefixNamespace* ns = nullptr;
    int depth = 0;  // pages from the root, this one included
    int lock = 0;   // sequences whose locked path passes through this node
    uint64_t last_use = 0;
    bool in_lru = false;
    std::map<std::vector<int32_t>, std::unique_ptr<PrefixNode>, KeyLess> children;
};

struct PrefixNamespace {
    std::string name;
    PrefixNode root;
    bool retired = false;
};

PrefixCache::PrefixCache(PagePool& pool) : m_pool(pool) {}

PrefixCache::~PrefixCache() {
    // Give the cache's own page references back; sequences still holding locks are being torn down too.
    std::vector<PrefixNode*> stack;
    auto drop_tree = [&](PrefixNamespace& ns) {
        stack.assign(1, &ns.root);
        while (!stack.empty()) {
            PrefixNode* n = stack.back();
            stack.pop_back();
            if (n->page >= 0) m_pool.release(n->page);
            for (auto& [k, c] : n->children) stack.push_back(c.get());
        }
    };
    for (auto& [name, ns] : m_live) drop_tree(*ns);
    for (auto& [p, ns] : m_retired) drop_tree(*ns);
}

PrefixNamespace* PrefixCache::live(const std::string& ns) const {
    auto it = m_live.find(ns);
    return it == m_live.end() ? nullptr : it->second.get();
}

PrefixNamespace& PrefixCache::live_or_create(const std::string& ns) {
    auto& slot = m_live[ns];
    if (!slot) {
        slot = std::make_unique<PrefixNamespace>();
        slot->name = ns;
        slot->root.ns = slot.get();
    }
    return *slot;
}

int PrefixCache::match_length(const std::string& ns, std::span<const int32_t> tokens) const {
    const PrefixNamespace* space = live(ns);
    if (!space) return 0;
    const int ps = page_size();
    const PrefixNode* node = &space->root;
    std::size_t i = 0;
    while ((i + 1) * std::size_t(ps) <= tokens.size()) {
        auto it = node->children.find(tokens.subspan(i * ps, ps));
        if (it == node->children.end()) break;
        node = it->second.get();
        ++i;
    }
    return int(i) * ps;
}

PrefixMatch PrefixCache::acquire(const std::string& ns, std::span<const int32_t> tokens) {
    PrefixNamespace& space = live_or_create(ns);
    const int ps = page_size();
    PrefixMatch m;
    PrefixNode* node = &space.root;
    std::size_t i = 0;
    while ((i + 1) * std::size_t(ps) <= tokens.size()) {
        auto it = node->children.find(tokens.subspan(i * ps, ps));
        if (it == node->children.end()) break;
        node = it->second.get();
        m.pages.push_back(node->page);
        m_pool.add_ref(node->page);
        ++i;
    }
    lock_path(node);
    m.lock = node;
    m.n_tokens = int(i) * ps;
    NamespaceStats& st = m_stats[ns];
    st.lookups++;
    st.hit_tokens += m.n_tokens;
    return m;
}

PrefixNode* PrefixCache::extend(PrefixNode* locked, std::span<const int32_t> tokens, std::span<const int32_t> pages) {
    if (!locked) throw_error(ErrorCode::internal, "prefix cache extend without a lock");
    if (locked->ns->retired) return locked;
    const int ps = page_size();
    const std::size_t n_full = std::min(pages.size(), tokens.size() / std::size_t(ps));
    PrefixNode* node = locked;
    for (std::size_t i = std::size_t(locked->depth); i < n_full; ++i) {
        auto key = tokens.subspan(i * ps, ps);
        auto it = node->children.find(key);
        if (it != node->children.end()) {
            node = it->second.get();
            continue;
        }
        auto child = std::make_unique<PrefixNode>();
        child->key.assign(key.begin(), key.end());
        child->page = pages[i];
        child->parent = node;
        child->ns = node->ns;
        child->depth = node->depth + 1;
        m_pool.add_ref(child->page);
        ++m_cached_pages;
        ++m_unlocked_pages;  // lock_path below takes it back
        m_stats[node->ns->name].pages_held++;
        PrefixNode* raw = child.get();
        node->children.emplace(child->key, std::move(child));
        node = raw;
    }
    // The old path stays locked by this sequence; only the new nodes below it take its lock. Walking just
    // those (not up to the root) keeps decode-time inserts O(new pages).
    for (PrefixNode* n = node; n != locked; n = n->parent)
        if (n->lock++ == 0) {
            --m_unlocked_pages;
            lru_remove(n);
        }
    return node;
}

void PrefixCache::release(PrefixNode* locked) {
    if (!locked) throw_error(ErrorCode::internal, "prefix cache release without a lock");
    PrefixNamespace* ns = locked->ns;
    unlock_path(locked);
    if (ns->retired) {
        prune_retired(locked);
        maybe_drop_namespace(ns);
    }
}

int PrefixCache::depth(const PrefixNode* node) { return node->depth; }
const std::string& PrefixCache::namespace_of(const PrefixNode* node) { return node->ns->name; }

void PrefixCache::lock_path(PrefixNode* node) {
    for (PrefixNode* n = node; n; n = n->parent) {
        if (n->lock++ == 0 && n->parent) {
            --m_unlocked_pages;
            lru_remove(n);
        }
    }
}

void PrefixCache::unlock_path(PrefixNode* node) {
    const uint64_t now = ++m_tick;
    for (PrefixNode* n = node; n; n = n->parent) {
        if (n->lock <= 0) throw_error(ErrorCode::internal, "prefix cache node unlocked more often than locked");
        n->last_use = now;
        if (--n->lock == 0 && n->parent) {
            ++m_unlocked_pages;
            if (n->children.empty() && !n->ns->retired) lru_add(n);
        }
    }
}

void PrefixCache::lru_add(PrefixNode* node) {
    if (node->in_lru) return;
    m_lru.emplace(node->last_use, node);
    node->in_lru = true;
}

void PrefixCache::lru_remove(PrefixNode* node) {
    if (!node->in_lru) return;
    m_lru.erase({node->last_use, node});
    node->in_lru = false;
}

void PrefixCache::free_node(PrefixNode* node) {
    if (!node->parent || node->lock != 0 || !node->children.empty())
        throw_error(ErrorCode::internal, "prefix cache tried to free a locked or inner node");
    lru_remove(node);
    m_pool.release(node->page);
    --m_cached_pages;
    --m_unlocked_pages;
    m_stats[node->ns->name].pages_held--;
    PrefixNode* parent = node->parent;
    parent->children.erase(node->key);  // destroys node
    if (parent->parent && parent->lock == 0 && parent->children.empty() && !parent->ns->retired) lru_add(parent);
}

int PrefixCache::evict(int n_pages) {
    int freed = 0;
    while (freed < n_pages && !m_lru.empty()) {
        free_node(m_lru.begin()->second);
        ++freed;
    }
    return freed;
}

void PrefixCache::prune_retired(PrefixNode* node) {
    while (node->parent && node->lock == 0 && node->children.empty()) {
        PrefixNode* parent = node->parent;
        free_node(node);
        node = parent;
    }
}

void PrefixCache::maybe_drop_namespace(PrefixNamespace* ns) {
    if (ns->retired && ns->root.lock == 0 && ns->root.children.empty()) m_retired.erase(ns);
}

void PrefixCache::retire(PrefixNamespace* ns) {
    auto owned = std::move(m_live[ns->name]);
    m_live.erase(ns->name);
    ns->retired = true;
    // Unlocked nodes form whole subtrees below locked ones (a lock covers every ancestor): free them
    // bottom-up now; locked nodes go when their last sequence releases them.
    std::vector<std::pair<PrefixNode*, bool>> stack{{&ns->root, false}};
    while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        stack.pop_back();
        if (!expanded) {
            stack.emplace_back(n, true);
            for (auto& [k, c] : n->children) stack.emplace_back(c.get(), false);
        } else if (n->parent && n->lock == 0 && n->children.empty()) {
            free_node(n);
        }
    }
    m_retired.emplace(ns, std::move(owned));
    maybe_drop_namespace(ns);
}

void PrefixCache::evict_namespace(const std::string& ns) {
    if (PrefixNamespace* space = live(ns)) retire(space);
}

void PrefixCache::clear() {
    std::vector<PrefixNamespace*> all;
    for (auto& [name, ns] : m_live) all.push_back(ns.get());
    for (PrefixNamespace* ns : all) retire(ns);
}

NamespaceStats PrefixCache::stats(const std::string& ns) const {
    auto it = m_stats.find(ns);
    return it == m_stats.end() ? NamespaceStats{} : it->second;
}

std::vector<std::string> PrefixCache::namespaces() const {
    std::vector<std::string> out;
    for (auto& [name, ns] : m_live) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace loradesk::kv
