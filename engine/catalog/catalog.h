// Catalog: the SQLite record of adapters (by content digest), their names, versions, aliases, pins,
// notes, lifecycle events, settings and per-minute statistics. Writes are transactional; reads see a
// consistent snapshot. Not thread-safe: one Catalog (= one connection) per thread; other threads and
// processes open their own (WAL lets readers run beside the StatsSink writer).
// Removing an adapter from the catalog never touches the user's files.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog_types.h"
#include "catalog/sqlite_db.h"
#include "model/adapter_folder.h"

namespace loradesk::catalog {

inline constexpr const char* kCatalogFileName = "catalog.sqlite3";

struct CatalogOptions {
    bool read_only = false;
    // A damaged database is moved aside to catalog.sqlite3.corrupt-<timestamp> and a new one created.
    bool start_fresh_if_corrupt = false;
    int busy_timeout_ms = 5000;
};

// Creates the directory if needed and returns <dir>/catalog.sqlite3; clear errors for unusable dirs.
std::string catalog_path_in(const std::string& data_dir, bool create);
// Moves the database (and its -wal/-shm files) to <path>.corrupt-<timestamp>; returns the new name.
std::string move_aside(const std::string& db_path);

class Catalog {
  public:
    // Opens or creates the database and migrates it. A damaged file gives Error(corrupt_file) whose
    // message names the start-fresh option, unless options.start_fresh_if_corrupt is set.
    explicit Catalog(const std::string& db_path, CatalogOptions options = {});

    Database& db() { return *m_db; }
    const std::string& path() const { return m_path; }
    // Set when this open moved a damaged database aside (the old file's new name).
    const std::string& moved_aside() const { return m_moved_aside; }

    // ---- writes (each one transaction) ----
    int64_t register_base_model(const std::string& name, const std::string& path, const std::string& architecture);
    // Registers `summary` under summary.name: a new name, a new version of an existing name (new digest),
    // or a refresh of the current one. Carries pin and notes over to a new version.
    RegisterResult register_adapter(const model::AdapterSummary& summary, const Compatibility& compat = {},
                                    const std::string& signature = "");
    // Many at once in one transaction (an engine start with thousands of folders); each summary's own
    // signature is stored. All or nothing: a name that is not allowed fails the batch before any write.
    std::vector<RegisterResult> register_adapters(const std::vector<AdapterRegistration>& batch);
    // Forgets the name, its versions and aliases (and adapters no other name uses, with their stats).
    // The folder is remembered as ignored so that a folder watcher does not bring it back.
    void remove_adapter(const std::string& name_or_alias);
    void set_pinned(const std::string& name_or_alias, bool pinned);
    void set_alias(const std::string& alias, const std::string& name_or_alias);
    void remove_alias(const std::string& alias);
    void set_notes(const std::string& name_or_alias, const std::string& notes);
    void set_tier(const std::string& digest, Tier tier);
    void set_missing(const std::string& name, bool missing);
    // Points the name back at an earlier version (recorded as a new version, so history only grows).
    RegisterResult rollback(const std::string& name_or_alias, int version);
    void add_event(EventKind kind, const std::string& digest, const std::string& name, const std::string& detail);
    void set_setting(const std::string& key, const std::string& value);

    // ---- reads ----
    std::optional<std::string> setting(const std::string& key);
    std::optional<std::string> resolve(const std::string& name_or_alias);  // -> name
    std::string require_name(const std::string& name_or_alias);            // throws not_found
    bool is_ignored(const std::string& path);
    // Signature stored for the current (named, present) adapter registered from `path`; "" if none.
    std::string current_signature(const std::string& path);
    std::vector<AdapterRecord> list(const ListQuery& query = {});
    std::optional<AdapterRecord> find(const std::string& name_or_alias);
    AdapterDetail show(const std::string& name_or_alias, int n_events = 20);  // throws not_found
    // Per-minute points in [from_minute, to_minute] (unix minutes), only minutes with traffic.
    std::vector<StatsPoint> stats_series(const std::string& digest, int64_t from_minute, int64_t to_minute);
    // The whole range merged into one point (minute = from_minute), with quantiles over all of it.
    StatsPoint stats_total(const std::string& digest, int64_t from_minute, int64_t to_minute);
    std::string integrity_check();  // "ok" or SQLite's first complaint
    // When content (a digest) was first catalogued; 0 when it never was.
    int64_t content_created_unix(const std::string& digest);
    std::map<std::string, int64_t> content_created_times();  // every catalogued digest (one query)

    // ---- folder digest cache (folder_digests.cpp) ----
    std::optional<FolderDigest> folder_digest(const std::string& path);
    std::map<std::string, FolderDigest> folder_digests();  // every row, by path (one query)
    void put_folder_digest(const FolderDigest& entry);     // insert or replace
    void forget_folder_digest(const std::string& path);

  private:
    int64_t head_adapter_id(const std::string& name);
    RegisterResult register_in_transaction(const model::AdapterSummary& summary, const Compatibility& compat,
                                           const std::string& signature);
    void open(CatalogOptions options);

    std::string m_path;
    std::string m_moved_aside;
    std::unique_ptr<Database> m_db;
};

}  // namespace loradesk::catalog
