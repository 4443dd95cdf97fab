// CatalogBridge: the engine's use of the SQLite catalog. One connection for the facade's reads and
// writes (guarded by a mutex: these calls are rare and come from HTTP/UI threads) and the StatsSink,
// whose writer thread batches per-request statistics so the engine loop never waits on SQLite.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/engine.h"
#include "catalog/adapter_import.h"
#include "catalog/catalog.h"
#include "catalog/stats_sink.h"
#include "lora/adapter_summary.h"

namespace loradesk::api {

class CatalogBridge {
  public:
    // Opens (creating) <data_dir>/catalog.sqlite3 and registers the base model. Throws Error with what
    // to do (read-only directory, damaged database: remove it or start with a fresh one). With start_fresh, a
    // damaged database is moved aside to catalog.sqlite3.corrupt-<time> and a new one created.
    CatalogBridge(const std::string& data_dir, const std::string& model_id, const std::string& model_path,
                  const std::string& architecture, bool start_fresh = false);

    void register_adapter(const lora::AdapterSummary& summary, const catalog::Compatibility& compat);
    // The folder digest cache (catalog::FolderDigest) and when content was first catalogued (0: never).
    std::optional<catalog::FolderDigest> folder_digest(const std::string& path);
    void put_folder_digest(const catalog::FolderDigest& entry);
    void forget_folder_digest(const std::string& path);
    int64_t content_created_unix(const std::string& digest);
    // For an engine start: the whole cache and every catalogued digest's time, read once, and many
    // registrations written in one transaction.
    std::map<std::string, catalog::FolderDigest> folder_digests();
    std::map<std::string, int64_t> content_created_times();
    void register_adapters(const std::vector<catalog::AdapterRegistration>& batch);
    catalog::ImportReport import_path(const std::string& path, const catalog::CompatibilityCheck& compat);
    void remove(const std::string& name);
    // Marks `name` missing when the catalog has it at `path` (its folder vanished); no-op otherwise.
    void mark_missing(const std::string& name, const std::string& path);
    void set_pinned(const std::string& name, bool pinned);
    void set_alias(const std::string& alias, const std::string& name);
    void event(catalog::EventKind kind, const std::string& digest, const std::string& name, const std::string& detail);

    // Adapters remembered from earlier runs (or the CLI) whose folders still exist.
    std::vector<catalog::AdapterRecord> servable_adapters();

    AdapterDetails details(const std::string& name_or_alias);
    std::vector<StatsPoint> history(const std::string& name_or_alias, int minutes);

    catalog::StatsSink& stats() { return *m_sink; }

  private:
    std::mutex m_mutex;
    std::string m_model_id;
    std::unique_ptr<catalog::Catalog> m_catalog;
    std::unique_ptr<catalog::StatsSink> m_sink;
};

}  // namespace loradesk::api
