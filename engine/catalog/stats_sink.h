// StatsSink: where the engine reports per-request statistics, cold loads, lifecycle events and tier
// changes. record*() is thread-safe and never waits on SQLite: it folds the event into an in-memory
// per-(adapter, minute) aggregate under a short mutex. One writer thread swaps the aggregate out every
// flush interval (or sooner when many events arrived) and writes it in one transaction on its own
// connection. Counts are never dropped: a slow or failing database only makes the aggregate wait
// (it grows with distinct adapter-minutes, not with events). Lifecycle events are a bounded queue;
// overflow is counted and written as one 'error' event. The destructor flushes and joins.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "catalog/catalog_types.h"
#include "catalog/latency_histogram.h"

namespace loradesk::catalog {

class Catalog;

struct StatsEvent {
    enum class Kind { request, cold_load };
    Kind kind = Kind::request;
    std::string digest;   // adapter content digest; "" = base model only
    int64_t time_ms = 0;  // unix milliseconds; 0 = now
    // request
    uint32_t prompt_tokens = 0;
    uint32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
    uint32_t completion_tokens = 0;
    bool error = false;
    double ttft_ms = -1;  // < 0 = not measured (e.g. failed before the first token)
    double e2e_ms = -1;
    // cold_load
    double load_ms = 0;
};

struct StatsSinkOptions {
    std::chrono::milliseconds flush_interval{250};
    std::size_t flush_after_events = 20000;  // wake the writer early after this many records
    std::size_t max_pending_events = 10000;  // lifecycle events queued between writes
    int busy_timeout_ms = 5000;
};

struct StatsSinkCounters {
    uint64_t recorded = 0;        // stats events accepted
    uint64_t written = 0;         // stats events committed to the database
    uint64_t batches = 0;         // committed write transactions
    uint64_t write_errors = 0;    // failed transactions (their data was kept and retried)
    uint64_t dropped_events = 0;  // lifecycle events over max_pending_events
};

class StatsSink {
  public:
    // Opens its own connection to the catalog at db_path (creating/migrating it when needed) and starts
    // the writer thread. Throws the Catalog's errors when the database cannot be opened.
    explicit StatsSink(const std::string& db_path, StatsSinkOptions options = {});
    ~StatsSink();
    StatsSink(const StatsSink&) = delete;
    StatsSink& operator=(const StatsSink&) = delete;

    void record(const StatsEvent& event) noexcept;
    void record_event(EventKind kind, const std::string& digest, const std::string& name,
                      const std::string& detail) noexcept;
    void record_tier(const std::string& digest, Tier tier) noexcept;

    // Blocks until everything recorded before the call is committed (or a write failed: returns false).
    bool flush();
    // Flushes and stops the writer. Idempotent; later records are ignored.
    void stop();
    StatsSinkCounters counters() const;

  private:
    struct MinuteAgg {
        int64_t requests = 0, prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0, errors = 0;
        int64_t cold_loads = 0;
        double load_ms_total = 0;
        int64_t last_ms = 0;
        uint64_t n_events = 0;
        LatencyHistogram ttft, e2e;
        void merge(const MinuteAgg& o);
    };
    struct StringHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    using Aggregate = std::unordered_map<std::string, std::map<int64_t, MinuteAgg>, StringHash, std::equal_to<>>;
    struct PendingEvent {
        int64_t time_ms;
        EventKind kind;
        std::string digest, name, detail;
    };
    struct Batch {
        Aggregate stats;
        std::vector<PendingEvent> events;
        std::map<std::string, Tier> tiers;
        uint64_t dropped_events = 0;
        uint64_t n_stats = 0;
        bool empty() const { return stats.empty() && events.empty() && tiers.empty() && dropped_events == 0; }
    };

    void writer_loop();
    void write_batch(const Batch& batch);
    void put_back(Batch&& batch);

    StatsSinkOptions m_options;
    std::unique_ptr<Catalog> m_catalog;  // used by the writer thread only
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_flushed;
    Batch m_pending;
    uint64_t m_flush_requested = 0;
    uint64_t m_flush_done = 0;
    bool m_last_write_ok = true;
    bool m_stop = false;
    StatsSinkCounters m_counters;
    std::thread m_writer;
};

}  // namespace loradesk::catalog
