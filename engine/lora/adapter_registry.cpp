// AdapterRegistry: names, aliases, ids, pins, pending names and in-flight counts. One mutex guards
// everything; the freed callback runs after it is released so that it may call back into the tiered
// store or KV.
#include "lora/adapter_registry.h"

#include "core/log.h"
#include "model/adapter_name.h"

namespace loradesk::lora {
namespace {

int64_t now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

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
    if (m_live_leases > 0)
        log::error("adapter registry destroyed with {} requests still holding adapters", m_live_leases);
}

void AdapterRegistry::set_on_freed(FreedFn fn) {
    std::lock_guard lock(m_mutex);
    m_on_freed = std::move(fn);
}

int AdapterRegistry::allocate_id_locked() {
    // Smallest free id keeps ids small enough for per-token arrays and metric labels.
    if (!m_free_ids.empty()) {
        int id = *m_free_ids.begin();
        m_free_ids.erase(m_free_ids.begin());
        return id;
    }
    return m_next_id++;
}

bool AdapterRegistry::collect_locked(const std::string& digest) {
    auto it = m_digests.find(digest);
    if (it == m_digests.end() || !it->second.names.empty() || it->second.in_flight > 0) return false;
    m_free_ids.insert(it->second.id);
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

std::vector<std::string> AdapterRegistry::aliases_of_locked(const std::string& name) const {
    std::vector<std::string> out;
    for (auto& [alias, target] : m_aliases)
        if (target == name) out.push_back(alias);
    return out;
}

RegisteredAdapter AdapterRegistry::describe_locked(const std::string& name,
                                                   const std::vector<std::string>& aliases) const {
    const NameEntry& n = m_names.at(name);
    RegisteredAdapter r{name, 0, n.pinned, n.ticket != 0, n.created_unix, aliases, n.summary};
    if (!n.digest.empty()) r.id = m_digests.at(n.digest).id;
    return r;
}

void AdapterRegistry::check_name_free_locked(const std::string& name) const {
    if (auto it = m_aliases.find(name); it != m_aliases.end())
        throw_expected(ErrorCode::conflict, "'" + model::printable_name(name) + "' is already an alias of adapter '" +
                                                it->second + "'; remove the alias or pick another name");
    if (auto it = m_names.find(name); it != m_names.end())
        throw_expected(ErrorCode::conflict, "an adapter named '" + name + "' is already loaded from '" +
                                                it->second.summary.path + "'; unload it first or pick another name");
}

std::optional<std::string> AdapterRegistry::attach_locked(const std::string& name, NameEntry& entry,
                                                          const AdapterSummary& summary) {
    std::string old = entry.digest;
    entry.summary = summary;
    entry.summary.name = name;
    entry.digest = summary.digest;
    entry.ticket = 0;
    if (old == summary.digest) return std::nullopt;
    DigestEntry& d = m_digests[summary.digest];
    if (d.id == 0) {
        d.id = allocate_id_locked();
        d.summary = entry.summary;
    }
    d.names.insert(name);
    if (old.empty()) return std::nullopt;
    // New content under an old name: a new identity. The old digest lives on only for the requests
    // that already hold it.
    m_digests[old].names.erase(name);
    if (collect_locked(old)) return old;
    return std::nullopt;
}

RegisteredAdapter AdapterRegistry::add(const std::string& name, const AdapterSummary& summary, OnTaken on_taken,
                                       int64_t created_unix) {
    model::check_adapter_name(name);
    if (summary.digest.empty()) throw_error(ErrorCode::internal, "adapter '" + name + "' registered without a digest");
    std::optional<std::string> freed;
    RegisteredAdapter out;
    {
        std::lock_guard lock(m_mutex);
        auto it = m_names.find(name);
        if (on_taken == OnTaken::refuse || it == m_names.end()) {
            check_name_free_locked(name);
            it = m_names.emplace(name, NameEntry{}).first;
        }
        NameEntry& entry = it->second;
        if (entry.digest != summary.digest || entry.created_unix == 0)
            entry.created_unix = created_unix > 0 ? created_unix : now_unix();
        freed = attach_locked(name, entry, summary);
        m_unloaded.erase(name);
        m_failed.erase(name);
        out = describe_locked(name, aliases_of_locked(name));
    }
    m_changed.notify_all();
    if (freed) fire_freed({*freed});
    return out;
}

RegisteredAdapter AdapterRegistry::add_folder(const std::string& name, const std::string& dir, OnTaken on_taken) {
    return add(name, summarize_adapter(dir), on_taken);
}

uint64_t AdapterRegistry::add_pending(const std::string& name, const std::string& path, int64_t created_unix) {
    model::check_adapter_name(name);
    std::lock_guard lock(m_mutex);
    check_name_free_locked(name);
    NameEntry& entry = m_names[name];
    entry.summary.name = name;
    entry.summary.path = path;
    entry.created_unix = created_unix > 0 ? created_unix : now_unix();
    entry.ticket = m_next_ticket++;
    m_unloaded.erase(name);
    m_failed.erase(name);
    return entry.ticket;
}

bool AdapterRegistry::resolve_pending(const std::string& name, uint64_t ticket, const AdapterSummary& summary,
                                      int64_t created_unix) {
    if (summary.digest.empty()) throw_error(ErrorCode::internal, "adapter '" + name + "' resolved without a digest");
    {
        std::lock_guard lock(m_mutex);
        auto it = m_names.find(name);
        if (it == m_names.end() || it->second.ticket != ticket) return false;
        if (created_unix > 0) it->second.created_unix = created_unix;
        attach_locked(name, it->second, summary);  // a pending name has no previous digest to free
    }
    m_changed.notify_all();
    return true;
}

bool AdapterRegistry::fail_pending(const std::string& name, uint64_t ticket, ErrorCode code,
                                   const std::string& message) {
    {
        std::lock_guard lock(m_mutex);
        auto it = m_names.find(name);
        if (it == m_names.end() || it->second.ticket != ticket) return false;
        Failure failure{code, message};
        drop_name_locked(name, &failure);  // pending: no digest to free
    }
    m_changed.notify_all();
    return true;
}

std::size_t AdapterRegistry::pending_count() const {
    std::lock_guard lock(m_mutex);
    std::size_t n = 0;
    for (auto& [name, e] : m_names) n += e.ticket != 0;
    return n;
}

void AdapterRegistry::check_name_free(const std::string& name) const {
    std::lock_guard lock(m_mutex);
    check_name_free_locked(name);
}

std::optional<std::string> AdapterRegistry::drop_name_locked(const std::string& name, const Failure* failure) {
    std::string digest = m_names.at(name).digest;
    m_names.erase(name);
    auto forget = [&](const std::string& key) {
        if (failure)
            m_failed[key] = *failure;
        else
            m_unloaded.insert(key);
    };
    for (auto it = m_aliases.begin(); it != m_aliases.end();) {
        if (it->second == name) {
            forget(it->first);
            it = m_aliases.erase(it);
        } else {
            ++it;
        }
    }
    forget(name);
    if (digest.empty()) return std::nullopt;
    m_digests[digest].names.erase(name);
    if (collect_locked(digest)) return digest;
    return std::nullopt;
}

void AdapterRegistry::unload(const std::string& name) {
    std::optional<std::string> freed;
    {
        std::lock_guard lock(m_mutex);
        const std::string* resolved = resolve_locked(name);
        if (!resolved)
            throw_expected(ErrorCode::not_found, "adapter '" + model::printable_name(name) + "' is not loaded");
        freed = drop_name_locked(std::string(*resolved), nullptr);
    }
    m_changed.notify_all();
    if (freed) fire_freed({*freed});
}

void AdapterRegistry::add_alias(const std::string& alias, const std::string& name) {
    model::check_adapter_name(alias, {}, "alias");
    std::lock_guard lock(m_mutex);
    if (!m_names.count(name))
        throw_expected(ErrorCode::not_found, "adapter '" + model::printable_name(name) + "' is not loaded");
    if (m_names.count(alias)) throw_expected(ErrorCode::conflict, "'" + alias + "' is already the name of an adapter");
    if (auto it = m_aliases.find(alias); it != m_aliases.end() && it->second != name)
        throw_expected(ErrorCode::conflict,
                       "alias '" + alias + "' already points to adapter '" + it->second + "'; remove it first");
    m_aliases[alias] = name;
    m_unloaded.erase(alias);
    m_failed.erase(alias);
}

void AdapterRegistry::remove_alias(const std::string& alias) {
    std::lock_guard lock(m_mutex);
    if (!m_aliases.erase(alias))
        throw_expected(ErrorCode::not_found, "alias '" + model::printable_name(alias) + "' does not exist");
}

void AdapterRegistry::set_pinned(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    const std::string* real = resolve_locked(name);
    if (!real) throw_expected(ErrorCode::not_found, "adapter '" + model::printable_name(name) + "' is not loaded");
    m_names[*real].pinned = pinned;
}

void AdapterRegistry::throw_unknown_locked(const std::string& key) const {
    if (auto it = m_failed.find(key); it != m_failed.end()) throw_expected(it->second.code, it->second.message);
    if (m_unloaded.count(key)) throw_expected(ErrorCode::not_found, "adapter '" + key + "' was unloaded");
    constexpr std::size_t kListed = 10;  // a server may have thousands: name a few
    std::string known;
    std::size_t n = 0;
    for (auto it = m_names.begin(); it != m_names.end() && n < kListed; ++it, ++n)
        known += (known.empty() ? "" : ", ") + it->first;
    if (m_names.size() > kListed) known += " and " + std::to_string(m_names.size() - kListed) + " more";
    throw_expected(ErrorCode::not_found, "adapter '" + model::printable_name(key) +
                                             "' not found (loaded adapters: " + (known.empty() ? "none" : known) + ")");
}

AdapterLease AdapterRegistry::acquire(const std::string& key, std::chrono::milliseconds wait_pending) {
    const auto deadline = std::chrono::steady_clock::now() + wait_pending;
    std::unique_lock lock(m_mutex);
    for (;;) {
        const std::string* real = resolve_locked(key);
        if (!real) throw_unknown_locked(key);
        const NameEntry& n = m_names.at(*real);
        if (n.digest.empty()) {
            if (std::chrono::steady_clock::now() >= deadline)
                throw_expected(ErrorCode::unavailable,
                               "adapter '" + key + "' is still being read (its folder is hashed in the background " +
                                   "after a start or a change); retry in a few seconds");
            m_changed.wait_until(lock, deadline);
            continue;
        }
        DigestEntry& d = m_digests.at(n.digest);
        d.in_flight++;
        m_live_leases++;
        return AdapterLease(this, n.digest, d.id);
    }
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
    return describe_locked(*real, aliases_of_locked(*real));
}

std::optional<RegisteredAdapter> AdapterRegistry::find_digest(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_digests.find(digest);
    if (it == m_digests.end()) return std::nullopt;
    if (!it->second.names.empty()) {
        const std::string& name = *it->second.names.begin();
        return describe_locked(name, aliases_of_locked(name));
    }
    return RegisteredAdapter{"", it->second.id, false, false, 0, {}, it->second.summary};  // draining: no name left
}

std::vector<AdapterSummary> AdapterRegistry::sources(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    std::vector<AdapterSummary> out;
    auto it = m_digests.find(digest);
    if (it == m_digests.end()) return out;
    for (auto& name : it->second.names) out.push_back(m_names.at(name).summary);
    if (out.empty()) out.push_back(it->second.summary);
    return out;
}

std::vector<RegisteredAdapter> AdapterRegistry::list() const {
    std::lock_guard lock(m_mutex);
    std::map<std::string, std::vector<std::string>> aliases;  // one pass, not one per name
    for (auto& [alias, target] : m_aliases) aliases[target].push_back(alias);
    std::vector<RegisteredAdapter> out;
    out.reserve(m_names.size());
    static const std::vector<std::string> kNone;
    for (auto& [name, e] : m_names) {
        auto it = aliases.find(name);
        out.push_back(describe_locked(name, it == aliases.end() ? kNone : it->second));
    }
    return out;
}

int AdapterRegistry::in_flight(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_digests.find(digest);
    return it == m_digests.end() ? 0 : it->second.in_flight;
}

bool AdapterRegistry::is_pinned_digest(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_digests.find(digest);
    if (it == m_digests.end()) return false;
    for (auto& name : it->second.names)
        if (m_names.at(name).pinned) return true;
    return false;
}

}  // namespace loradesk::lora
