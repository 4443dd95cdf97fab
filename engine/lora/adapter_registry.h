// AdapterRegistry: the served adapters by name. Maps names and aliases to content digests, hands out
// stable small integer ids, tracks pins, and counts in-flight requests per digest so that an adapter
// unloaded while requests still use it stays alive until the last of them ends.
// Thread-safe: HTTP threads resolve names, the engine loop acquires and releases.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lora/adapter_summary.h"

namespace loradesk::lora {

struct RegisteredAdapter {
    std::string name;
    int id = 0;  // >= 1, stable while the digest is registered or in use
    bool pinned = false;
    std::vector<std::string> aliases;
    AdapterSummary summary;  // summary.digest is the identity
};

class AdapterRegistry;

// Holds one in-flight request's claim on an adapter. Releasing the last lease of an unloaded adapter
// frees it (the registry's on_freed callback runs then, on the releasing thread). Move-only.
class AdapterLease {
public:
    AdapterLease() = default;
    ~AdapterLease() { release(); }
    AdapterLease(AdapterLease&& o) noexcept { *this = std::move(o); }
    AdapterLease& operator=(AdapterLease&& o) noexcept;
    AdapterLease(const AdapterLease&) = delete;
    AdapterLease& operator=(const AdapterLease&) = delete;

    explicit operator bool() const { return m_registry != nullptr; }
    const std::string& digest() const { return m_digest; }
    int id() const { return m_id; }
    void release();

private:
    friend class AdapterRegistry;
    AdapterLease(AdapterRegistry* r, std::string digest, int id) : m_registry(r), m_digest(std::move(digest)), m_id(id) {}
    AdapterRegistry* m_registry = nullptr;
    std::string m_digest;
    int m_id = 0;
};

class AdapterRegistry {
public:
    // Called once per digest when it is neither registered under any name nor used by any request, so
    // the owner can drop its host/device copies and evict its KV namespace. Runs without the lock held.
    using FreedFn = std::function<void(const std::string& digest)>;

    AdapterRegistry() = default;
    ~AdapterRegistry();  // leases must not outlive the registry
    AdapterRegistry(const AdapterRegistry&) = delete;
    AdapterRegistry& operator=(const AdapterRegistry&) = delete;

    void set_on_freed(FreedFn fn);

    // Registers (or re-registers) `name` -> summary.digest. Re-registering with the same digest keeps
    // id, pin and aliases; with a different digest the old one is released from the name (freed once
    // idle) and the new content gets a new identity. Names must not collide with another's alias.
    RegisteredAdapter add(const std::string& name, const AdapterSummary& summary);
    // Reads the folder (summarize_adapter) and registers it under `name`.
    RegisteredAdapter add_folder(const std::string& name, const std::string& dir);
    // Removes the name and its aliases. Requests already running keep the adapter; new ones for the
    // name fail with not_found "adapter 'x' was unloaded". Throws not_found for unknown names.
    void unload(const std::string& name);

    void add_alias(const std::string& alias, const std::string& name);  // conflict if taken
    void remove_alias(const std::string& alias);
    void set_pinned(const std::string& name, bool pinned);

    // Resolves a name or alias and claims the adapter for one request. Throws ExpectedError(not_found).
    AdapterLease acquire(const std::string& name_or_alias);
    // Resolves without claiming (for validation on HTTP threads). nullopt when unknown.
    std::optional<RegisteredAdapter> find(const std::string& name_or_alias) const;
    std::optional<RegisteredAdapter> find_digest(const std::string& digest) const;
    std::vector<RegisteredAdapter> list() const;  // sorted by name
    int in_flight(const std::string& digest) const;
    bool is_pinned_digest(const std::string& digest) const;

private:
    friend class AdapterLease;
    struct DigestEntry {
        int id = 0;
        int in_flight = 0;
        int n_names = 0;  // names currently mapped to it
        AdapterSummary summary;
    };
    struct NameEntry {
        std::string digest;
        bool pinned = false;
    };

    void release(const std::string& digest);
    // Drops the digest if unreferenced; returns true when it was freed (caller fires on_freed).
    bool collect_locked(const std::string& digest);
    int allocate_id_locked();
    RegisteredAdapter describe_locked(const std::string& name) const;
    const std::string* resolve_locked(const std::string& name_or_alias) const;  // -> name
    void fire_freed(const std::vector<std::string>& digests);

    mutable std::mutex m_mutex;
    std::map<std::string, NameEntry> m_names;
    std::map<std::string, std::string> m_aliases;  // alias -> name
    std::map<std::string, DigestEntry> m_digests;
    std::set<int> m_used_ids;
    std::set<std::string> m_unloaded;  // names unloaded and not re-registered, for the error message
    FreedFn m_on_freed;
    int m_live_leases = 0;
};

}  // namespace loradesk::lora
