// Value types of the adapter catalog: records, list queries, events, per-minute statistics.
// Plain data; no database access here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/adapter_folder.h"

namespace loradesk::catalog {

enum class EventKind { import, load, unload, evict, pin, unpin, error, remove, missing, alias, version };
std::string_view event_kind_name(EventKind kind);
bool parse_event_kind(std::string_view name, EventKind* out);

enum class Compat { compatible, incompatible, unknown };
std::string_view compat_name(Compat c);
Compat parse_compat(std::string_view name);  // unknown for anything else

// Whether an adapter fits the loaded base model, decided by the caller (see adapter_import.h).
struct Compatibility {
    Compat state = Compat::unknown;
    std::string reason;      // why not, when incompatible
    std::string base_model;  // the base it was checked against ("" = none loaded)
};

// Where the adapter lives right now (runtime state; the catalog stores the last known value).
enum class Tier { gpu, cpu, disk };
std::string_view tier_name(Tier t);
bool parse_tier(std::string_view name, Tier* out);

// One adapter name and the adapter (content digest) it currently points at.
struct AdapterRecord {
    std::string name;
    std::string digest;
    std::string path;
    std::string declared_base;  // base_model_name_or_path from adapter_config.json
    std::string checked_base;   // base model the compatibility was decided against
    Compat compat = Compat::unknown;
    std::string compat_reason;
    int rank = 0;
    double alpha = 0;
    bool rslora = false;
    std::vector<std::string> targets;
    std::vector<int> layers;
    int64_t size_bytes = 0;
    std::string dtype;
    int64_t created_unix = 0;
    int64_t last_used_unix = 0;
    bool pinned = false;
    std::string notes;
    Tier tier = Tier::disk;
    bool missing = false;  // its folder disappeared from disk
    int64_t requests_total = 0;
    int version = 1;  // current version number of this name
};

enum class SortKey { name, last_used, requests, size };
bool parse_sort_key(std::string_view name, SortKey* out);

struct ListQuery {
    std::string name_contains;  // case-insensitive substring of the name
    std::string base_model;     // exact: declared base or the base it was checked against
    std::optional<bool> pinned;
    std::optional<Tier> tier;
    // Runtime tiers by digest (from the engine); adapters not in the map use their last known tier.
    std::map<std::string, Tier> runtime_tiers;
    SortKey sort = SortKey::name;  // name ascending; last_used, requests, size descending
    bool reverse = false;
    int limit = 0;  // 0 = all
    int offset = 0;
};

struct VersionRecord {
    int version = 0;
    std::string digest;
    std::string path;
    int64_t created_unix = 0;
    bool current = false;
};

struct EventRecord {
    int64_t time_ms = 0;
    EventKind kind = EventKind::import;
    std::string name;
    std::string digest;  // "" when the adapter is gone or the event is not about one
    std::string detail;
};

struct AdapterDetail {
    AdapterRecord adapter;
    std::vector<VersionRecord> versions;  // oldest first
    std::vector<std::string> aliases;
    std::vector<EventRecord> events;  // newest first
};

// One minute of traffic for one adapter. Latency quantiles are estimated from the stored histograms.
struct StatsPoint {
    int64_t minute = 0;  // unix time / 60
    int64_t requests = 0;
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t errors = 0;
    int64_t cold_loads = 0;
    double load_ms_total = 0;
    double ttft_p50_ms = 0, ttft_p95_ms = 0;
    double e2e_p50_ms = 0, e2e_p95_ms = 0;
};

// One adapter folder's cached digest: valid while the folder's files still have `signature`.
struct FolderDigest {
    std::string path;
    std::string signature;          // model::folder_signature when it was hashed
    model::AdapterSummary summary;  // digest and config summary (name left empty: folders have no name here)
    std::string compat_key;         // what the verdict below was reached against ("" = none)
    Compat compat = Compat::unknown;
    std::string compat_reason;
    int64_t hashed_unix = 0;
};

// One adapter to register (Catalog::register_adapters): its summary (name, path, signature set) and
// how it fits the loaded base.
struct AdapterRegistration {
    model::AdapterSummary summary;
    Compatibility compat;
};

enum class RegisterOutcome { added, new_version, unchanged };

struct RegisterResult {
    RegisterOutcome outcome = RegisterOutcome::added;
    std::string name;
    std::string digest;
    int version = 1;
};

}  // namespace loradesk::catalog
