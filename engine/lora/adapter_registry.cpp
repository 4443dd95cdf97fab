// AdapterRegistry: names, aliases, ids, pins and in-flight counts. One mutex guards everything; the
// freed callback runs after it is released so that it may call back into the tiered store or KV.
#include "lora/adapter_registry.h"

#include "core/error.h"
#include "core/log.h"

namespace loradesk::lora {

AdapterLease& AdapterLease::operator=(AdapterLease&& o) noexcept {
    if (this != &o) {
        release();
        m_registry = o.m_registry;
        m_digest = std::move(o.m_digest);
        m_id = o.m_id;
        o.m_registry = nullptr;
    }
    return *this;
}

void AdapterLease::release() {
    if (!m_registry) return;
    AdapterRegistry* r = m_registry;
    m_registry = nullptr;
    r->release(m_digest);
}

AdapterRegistry::~AdapterRegistry() {
    if (m_live_leases > 0) log::error("adapter registry destroyed with {} requests still holding adapters", m_live_leases);
}

void AdapterRegistry::set_on_freed(FreedFn fn) {
    std::lock_guard lock(m_mutex);
    m_on_freed = std::move(fn);
}

int AdapterRegistry::allocate_id_locked() {
    int id = 1;  // smallest free id keeps ids small enough for per-token arrays and metric labels
    while (m_used_ids.count(id)) ++id;
    m_used_ids.insert(id);
    return id;
}

bool AdapterRegistry::collect_locked(const std::string& digest) {
    auto it = m_digests.find(digest);
    if (it == m_digests.end() || it->second.n_names > 0 || it->second.in_flight > 0) return false;
    m_used_ids.erase(it->second.id);
    m_digests.erase(it);
    return true;
}

void AdapterRegistry::fire_freed(const std::vector<std::string>& digests) {
    FreedFn fn;
    {
        std::lock_guard lock(m_mutex);
        fn = m_on_freed;
    }
    if (fn)
        for (auto& d : digests) fn(d);
}

const std::string* AdapterRegistry::resolve_locked(const std::string& key) const {
    if (auto it = m_names.find(key); it != m_names.end()) return &it->first;
    if (auto it = m_aliases.find(key); it != m_aliases.end()) return &it->second;
    return nullptr;
}

RegisteredAdapter AdapterRegistry::describe_locked(const std::string& name) const {
    const NameEntry& n = m_names.at(name);
    const DigestEntry& d = m_digests.at(n.digest);
    RegisteredAdapter r{name, d.id, n.pinned, {}, d.summary};
    for (auto& [alias, target] : m_aliases)
        if (target == name) r.aliases.push_back(alias);
    return r;
}

RegisteredAdapter AdapterRegistry::add(const std::string& name, const AdapterSummary& summary) {
    if (name.empty()) throw_expected(ErrorCode::invalid_argument, "adapter name must not be empty");
    if (summary.digest.empty()) throw_error(ErrorCode::internal, "adapter '" + name + "' registered without a digest");
    std::vector<std::string> freed;
    RegisteredAdapter out;
    {
        std::lock_guard lock(m_mutex);
        if (m_aliases.count(name))
            throw_expected(ErrorCode::conflict, "'" + name + "' is already an alias of adapter '" + m_aliases[name] +
                                                    "'; remove the alias or pick another name");
        auto& d = m_digests[summary.digest];
        if (d.id == 0) {
            d.id = allocate_id_locked();
            d.summary = summary;
        }
        auto it = m_names.find(name);
        if (it == m_names.end()) {
            m_names[name] = NameEntry{summary.digest, false};
            d.n_names++;
        } else if (it->second.digest != summary.digest) {
            // New content under an old name: a new identity. The old digest lives on only for the
            // requests that already hold it.
            std::string old = it->second.digest;
            it->second.digest = summary.digest;
            d.n_names++;
            m_digests[old].n_names--;
            if (collect_locked(old)) freed.push_back(old);
        }
        m_unloaded.erase(name);
        out = describe_locked(name);
    }
    fire_freed(freed);
    return out;
}

RegisteredAdapter AdapterRegistry::add_folder(const std::string& name, const std::string& dir) {
    return add(name, summarize_adapter(dir));
}

void AdapterRegistry::unload(const std::string& name) {
    std::vector<std::string> freed;
    {
        std::lock_guard lock(m_mutex);
        const std::string* resolved = resolve_locked(name);
        if (!resolved) throw_expected(ErrorCode::not_found, "adapter '" + name + "' is not loaded");
        std::string real = *resolved;
        std::string digest = m_names[real].digest;
        m_names.erase(real);
        for (auto it = m_aliases.begin(); it != m_aliases.end();) {
            if (it->second == real) {
                m_unloaded.insert(it->first);
                it = m_aliases.erase(it);
            } else {
                ++it;
            }
        }
        m_unloaded.insert(real);
        m_digests[digest].n_names--;
        if (collect_locked(digest)) freed.push_back(digest);
    }
    fire_freed(freed);
}

void AdapterRegistry::add_alias(const std::string& alias, const std::string& name) {
    std::lock_guard lock(m_mutex);
    if (!m_names.count(name)) throw_expected(ErrorCode::not_found, "adapter '" + name + "' is not loaded");
    if (m_names.count(alias)) throw_expected(ErrorCode::conflict, "'" + alias + "' is already the name of an adapter");
    if (auto it = m_aliases.find(alias); it != m_aliases.end() && it->second != name)
        throw_expected(ErrorCode::conflict, "alias '" + alias + "' already points to adapter '" + it->second +
                                                "'; remove it first");
    m_aliases[alias] = name;
    m_unloaded.erase(alias);
}

void AdapterRegistry::remove_alias(const std::string& alias) {
    std::lock_guard lock(m_mutex);
    if (!m_aliases.erase(alias)) throw_expected(ErrorCode::not_found, "alias '" + alias + "' does not exist");
}

void AdapterRegistry::set_pinned(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    const std::string* real = resolve_locked(name);
    if (!real) throw_expected(ErrorCode::not_found, "adapter '" + name + "' is not loaded");
    m_names[*real].pinned = pinned;
}

AdapterLease AdapterRegistry::acquire(const std::string& key) {
    std::lock_guard lock(m_mutex);
    const std::string* real = resolve_locked(key);
    if (!real) {
        if (m_unloaded.count(key)) throw_expected(ErrorCode::not_found, "adapter '" + key + "' was unloaded");
        std::string known;
        for (auto& [n, e] : m_names) known += (known.empty() ? "" : ", ") + n;
        throw_expected(ErrorCode::not_found, "adapter '" + key + "' not found (loaded adapters: " +
                                                 (known.empty() ? "none" : known) + ")");
    }
    DigestEntry& d = m_digests.at(m_names.at(*real).digest);
    d.in_flight++;
    m_live_leases++;
    return AdapterLease(this, d.summary.digest, d.id);
}

void AdapterRegistry::release(const std::string& digest) {
    bool freed = false;
    {
        std::lock_guard lock(m_mutex);
        auto it = m_digests.find(digest);
        if (it == m_digests.end() || it->second.in_flight <= 0) {
            // Runs from lease destructors: report the bug instead of terminating the process.
            log::error("adapter lease released twice for digest {}", digest);
            return;
        }
        it->second.in_flight--;
        m_live_leases--;
        freed = collect_locked(digest);
    }
    if (freed) fire_freed({digest});
}

std::optional<RegisteredAdapter> AdapterRegistry::find(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    const std::string* real = resolve_locked(key);
    if (!real) return std::nullopt;
    return describe_locked(*real);
}

std::optional<RegisteredAdapter> AdapterRegistry::find_digest(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    for (auto& [name, e] : m_names)
        if (e.digest == digest) return describe_locked(name);
    auto it = m_digests.find(digest);
    if (it == m_digests.end()) return std::nullopt;
    return RegisteredAdapter{"", it->second.id, false, {}, it->second.summary};  // draining: no name left
}

std::vector<RegisteredAdapter> AdapterRegistry::list() const {
    std::lock_guard lock(m_mutex);
    std::vector<RegisteredAdapter> out;
    for (auto& [name, e] : m_names) out.push_back(describe_locked(name));
    return out;
}

int AdapterRegistry::in_flight(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_digests.find(digest);
    return it == m_digests.end() ? 0 : it->second.in_flight;
}

bool AdapterRegistry::is_pinned_digest(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    for (auto& [name, e] : m_names)
        if (e.digest == digest && e.pinned) return true;
    return false;
}

}  // namespace loradesk::lora
