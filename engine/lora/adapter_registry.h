// AdapterRegistry: the served adapters by name. Each name maps to its own folder (path, signature) and
// content digest; names with identical content share the digest (the identity: KV namespace, slot, id)
// but keep their own paths. Hands out stable small integer ids, tracks pins, and counts in-flight
// requests per digest so that an adapter unloaded while requests still use it stays alive until the
// last of them ends. A name may be *pending*: known by folder while its digest is computed in the
// background; requests for it wait (bounded) until it is resolved or fails.
// Thread-safe: HTTP threads resolve names, the engine loop acquires and releases.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "lora/adapter_summary.h"

namespace loradesk::lora {

struct RegisteredAdapter {
    std::string name;
    int id = 0;  // >= 1, stable while the digest is registered or in use; 0 while pending
    bool pinned = false;
    bool pending = false;      // digest not known yet: summary holds name and path only
    int64_t created_unix = 0;  // when this name got its current content (the catalog's time where known)
    std::vector<std::string> aliases;
    AdapterSummary summary;  // summary.digest is the identity; summary.name/path are this name's
};

// What add() does when the name is already registered (or pending).
enum class OnTaken {
    refuse,   // ExpectedError(conflict): clients never re-point a served name by loading over it
    replace,  // the folder watch re-registering a folder it serves after its files changed
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
    AdapterLease(AdapterRegistry* r, std::string digest, int id)
        : m_registry(r), m_digest(std::move(digest)), m_id(id) {}
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

    // Registers `name` -> summary (digest, path). A taken name (or pending one) is refused with
    // conflict unless `on_taken` is replace: then the same digest keeps id, pin and aliases, and a
    // different digest is a new identity while the old one is released from the name (freed once
    // idle). Names must not collide with an alias. created_unix 0 = now.
    RegisteredAdapter add(const std::string& name, const AdapterSummary& summary, OnTaken on_taken = OnTaken::refuse,
                          int64_t created_unix = 0);
    // Reads the folder (summarize_adapter) and registers it under `name`.
    RegisteredAdapter add_folder(const std::string& name, const std::string& dir, OnTaken on_taken = OnTaken::refuse);

    // Registers `name` for the folder at `path` before its digest is known; returns a ticket for
    // resolve_pending / fail_pending. Conflict when the name is taken.
    uint64_t add_pending(const std::string& name, const std::string& path, int64_t created_unix = 0);
    // Completes a pending name (waiting requests proceed). False, changing nothing, when the name no
    // longer waits for this ticket (unloaded or registered anew meanwhile).
    bool resolve_pending(const std::string& name, uint64_t ticket, const AdapterSummary& summary,
                         int64_t created_unix = 0);
    // The folder could not be read: the name and its aliases are dropped; waiting requests, and later
    // ones until the name is registered again, fail with `code` and `message`.
    bool fail_pending(const std::string& name, uint64_t ticket, ErrorCode code, const std::string& message);
    std::size_t pending_count() const;
    // Throws ExpectedError(conflict) when `name` is taken (a name, pending name or alias), as add() would.
    void check_name_free(const std::string& name) const;

    // Removes the name and its aliases. Requests already running keep the adapter; new ones for the
    // name fail with not_found "adapter 'x' was unloaded". Throws not_found for unknown names.
    void unload(const std::string& name);

    void add_alias(const std::string& alias, const std::string& name);  // conflict if taken
    void remove_alias(const std::string& alias);
    void set_pinned(const std::string& name, bool pinned);

    // Resolves a name or alias and claims the adapter for one request. Throws ExpectedError(not_found)
    // for unknown names; for a pending one waits up to `wait_pending` for its digest, then throws
    // ExpectedError(unavailable) ("still being read"), or the folder's error if reading it failed.
    AdapterLease acquire(const std::string& name_or_alias,
                         std::chrono::milliseconds wait_pending = std::chrono::milliseconds(0));
    // Resolves without claiming (for validation on HTTP threads). nullopt when unknown.
    std::optional<RegisteredAdapter> find(const std::string& name_or_alias) const;
    std::optional<RegisteredAdapter> find_digest(const std::string& digest) const;
    // Every folder registered with this content (one summary per name; a draining digest's own),
    // for the disk loader, which reads from one whose files still match their signature.
    std::vector<AdapterSummary> sources(const std::string& digest) const;
    std::vector<RegisteredAdapter> list() const;  // sorted by name, pending ones included
    int in_flight(const std::string& digest) const;
    bool is_pinned_digest(const std::string& digest) const;

  private:
    friend class AdapterLease;
    struct DigestEntry {
        int id = 0;
        int in_flight = 0;
        std::set<std::string> names;  // names currently mapped to it
        AdapterSummary summary;       // of the first name (kept for requests that outlive every name)
    };
    struct NameEntry {
        std::string digest;  // "" while pending
        AdapterSummary summary;
        bool pinned = false;
        int64_t created_unix = 0;
        uint64_t ticket = 0;  // != 0 while pending
    };
    struct Failure {
        ErrorCode code = ErrorCode::invalid_argument;
        std::string message;
    };

    void release(const std::string& digest);
    // Attaches `name` to summary.digest (creating the digest entry) and detaches it from its previous
    // digest; returns that digest when it became unreferenced (the caller fires on_freed).
    std::optional<std::string> attach_locked(const std::string& name, NameEntry& entry, const AdapterSummary& summary);
    // Drops the digest if unreferenced; returns true when it was freed (caller fires on_freed).
    bool collect_locked(const std::string& digest);
    int allocate_id_locked();
    void check_name_free_locked(const std::string& name) const;
    RegisteredAdapter describe_locked(const std::string& name, const std::vector<std::string>& aliases) const;
    std::vector<std::string> aliases_of_locked(const std::string& name) const;
    const std::string* resolve_locked(const std::string& name_or_alias) const;  // -> name
    // Removes `name` and its aliases; `failure` records why for later lookups (else "was unloaded").
    std::optional<std::string> drop_name_locked(const std::string& name, const Failure* failure);
    [[noreturn]] void throw_unknown_locked(const std::string& key) const;
    void fire_freed(const std::vector<std::string>& digests);

    mutable std::mutex m_mutex;
    std::condition_variable m_changed;  // a pending name was resolved, failed or dropped
    std::map<std::string, NameEntry> m_names;
    std::map<std::string, std::string> m_aliases;  // alias -> name
    std::map<std::string, DigestEntry> m_digests;
    std::set<int> m_free_ids;  // ids below m_next_id that are free again
    int m_next_id = 1;
    uint64_t m_next_ticket = 1;
    std::set<std::string> m_unloaded;         // names unloaded and not re-registered, for the error message
    std::map<std::string, Failure> m_failed;  // names whose folder could not be read, until re-registered
    FreedFn m_on_freed;
    int m_live_leases = 0;
};

}  // namespace loradesk::lora
