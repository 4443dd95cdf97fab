// StatsSink: in-memory aggregation on the caller's thread, batched transactional writes on one writer thread.
#include "catalog/stats_sink.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "core/error.h"
#include "core/log.h"

namespace loradesk::catalog {
namespace {

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// hist_add(a, b): sums two encoded histograms (NULL = empty), so the upsert can merge minutes in SQL.
void hist_add(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    try {
        LatencyHistogram sum;
        for (int i = 0; i < argc; ++i) {
            if (sqlite3_value_type(argv[i]) == SQLITE_NULL) continue;
            auto* p = static_cast<const uint8_t*>(sqlite3_value_blob(argv[i]));
            sum.merge(LatencyHistogram::decode(p, std::size_t(sqlite3_value_bytes(argv[i]))));
        }
        if (sum.empty()) {
            sqlite3_result_null(ctx);
            return;
        }
        auto blob = sum.encode();
        sqlite3_result_blob64(ctx, blob.data(), blob.size(), SQLITE_TRANSIENT);
    } catch (const std::exception& e) {
        sqlite3_result_error(ctx, e.what(), -1);
    }
}

void bind_hist(Statement& st, int index, const LatencyHistogram& h) {
    if (h.empty()) {
        st.bind_null(index);
        return;
    }
    auto blob = h.encode();
    st.bind_blob(index, blob.data(), blob.size());
}

}  // namespace

void StatsSink::MinuteAgg::merge(const MinuteAgg& o) {
    requests += o.requests;
    prompt_tokens += o.prompt_tokens;
    cached_tokens += o.cached_tokens;
    completion_tokens += o.completion_tokens;
    errors += o.errors;
    cold_loads += o.cold_loads;
    load_ms_total += o.load_ms_total;
    last_ms = std::max(last_ms, o.last_ms);
    n_events += o.n_events;
    ttft.merge(o.ttft);
    e2e.merge(o.e2e);
}

StatsSink::StatsSink(const std::string& db_path, StatsSinkOptions options) : m_options(options) {
    CatalogOptions copts;
    copts.busy_timeout_ms = options.busy_timeout_ms;
    m_catalog = std::make_unique<Catalog>(db_path, copts);
    int rc =
        sqlite3_create_function_v2(m_catalog->db().handle(), "loradesk_hist_add", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                   nullptr, hist_add, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) m_catalog->db().fail(rc, "registering loradesk_hist_add");
    m_writer = std::thread([this] { writer_loop(); });
}

StatsSink::~StatsSink() { stop(); }

void StatsSink::record(const StatsEvent& e) noexcept {
    int64_t t = e.time_ms > 0 ? e.time_ms : now_ms();
    std::unique_lock lock(m_mutex);
    if (m_stop) return;
    try {
        auto it = m_pending.stats.find(std::string_view(e.digest));
        if (it == m_pending.stats.end()) it = m_pending.stats.emplace(e.digest, std::map<int64_t, MinuteAgg>{}).first;
        MinuteAgg& a = it->second[t / 60000];
        if (e.kind == StatsEvent::Kind::cold_load) {
            a.cold_loads += 1;
            a.load_ms_total += e.load_ms;
        } else {
            a.requests += 1;
            a.prompt_tokens += e.prompt_tokens;
            a.cached_tokens += e.cached_tokens;
            a.completion_tokens += e.completion_tokens;
            a.errors += e.error ? 1 : 0;
            if (e.ttft_ms >= 0) a.ttft.add(e.ttft_ms);
            if (e.e2e_ms >= 0) a.e2e.add(e.e2e_ms);
            a.last_ms = std::max(a.last_ms, t);
        }
        a.n_events += 1;
        m_pending.n_stats += 1;
        m_counters.recorded += 1;
    } catch (const std::bad_alloc&) {
        return;  // out of memory: losing one sample beats taking the engine down
    }
    if (m_pending.n_stats >= m_options.flush_after_events) {
        lock.unlock();
        m_wake.notify_one();
    }
}

void StatsSink::record_event(EventKind kind, const std::string& digest, const std::string& name,
                             const std::string& detail) noexcept {
    std::lock_guard lock(m_mutex);
    if (m_stop) return;
    if (m_pending.events.size() >= m_options.max_pending_events) {
        m_pending.dropped_events += 1;
        m_counters.dropped_events += 1;
        return;
    }
    try {
        m_pending.events.push_back({now_ms(), kind, digest, name, detail});
    } catch (const std::bad_alloc&) {
        m_pending.dropped_events += 1;
    }
}

void StatsSink::record_tier(const std::string& digest, Tier tier) noexcept {
    std::lock_guard lock(m_mutex);
    if (m_stop) return;
    try {
        m_pending.tiers[digest] = tier;
    } catch (const std::bad_alloc&) {
    }
}

bool StatsSink::flush() {
    std::unique_lock lock(m_mutex);
    if (!m_writer.joinable()) return m_last_write_ok;
    uint64_t ticket = ++m_flush_requested;
    m_wake.notify_one();
    m_flushed.wait(lock, [&] { return m_flush_done >= ticket; });
    return m_last_write_ok;
}

void StatsSink::stop() {
    {
        std::lock_guard lock(m_mutex);
        if (m_stop) return;
        m_stop = true;
    }
    m_wake.notify_one();
    if (m_writer.joinable()) m_writer.join();
}

StatsSinkCounters StatsSink::counters() const {
    std::lock_guard lock(m_mutex);
    return m_counters;
}

void StatsSink::put_back(Batch&& batch) {
    // Newer data recorded meanwhile is merged on top; tiers recorded later win over the older ones.
    std::lock_guard lock(m_mutex);
    for (auto& [digest, minutes] : batch.stats)
        for (auto& [minute, agg] : minutes) m_pending.stats[digest][minute].merge(agg);
    m_pending.n_stats += batch.n_stats;
    for (auto& [digest, tier] : batch.tiers) m_pending.tiers.emplace(digest, tier);
    batch.events.insert(batch.events.end(), std::make_move_iterator(m_pending.events.begin()),
                        std::make_move_iterator(m_pending.events.end()));
    m_pending.events = std::move(batch.events);
    m_pending.dropped_events += batch.dropped_events;
}

void StatsSink::writer_loop() {
    int failures = 0;
    for (;;) {
        Batch batch;
        uint64_t ticket = 0;
        bool stopping = false;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait_for(lock, m_options.flush_interval, [&] {
                return m_stop || m_flush_requested > m_flush_done || m_pending.n_stats >= m_options.flush_after_events;
            });
            std::swap(batch, m_pending);
            ticket = m_flush_requested;
            stopping = m_stop;
        }
        bool ok = true;
        if (!batch.empty()) {
            try {
                write_batch(batch);
                failures = 0;
                std::lock_guard lock(m_mutex);
                m_counters.written += batch.n_stats;
                m_counters.batches += 1;
            } catch (const std::exception& e) {
                ok = false;
                ++failures;
                log::warn("catalog stats: write failed ({}); keeping {} events in memory and retrying", e.what(),
                          batch.n_stats);
                put_back(std::move(batch));
                std::lock_guard lock(m_mutex);
                m_counters.write_errors += 1;
            }
        }
        {
            std::lock_guard lock(m_mutex);
            m_last_write_ok = ok;
            m_flush_done = std::max(m_flush_done, ticket);
        }
        m_flushed.notify_all();
        // On shutdown, retry a failing database a few times, then give up rather than hang the exit.
        if (stopping && (ok || failures >= 3)) {
            if (!ok) log::error("catalog stats: giving up on unwritten statistics at shutdown");
            break;
        }
        if (!ok) std::this_thread::sleep_for(m_options.flush_interval);
    }
    std::lock_guard lock(m_mutex);
    m_flush_done = ~uint64_t(0);
    m_flushed.notify_all();
}

void StatsSink::write_batch(const Batch& batch) {
    Database& db = m_catalog->db();
    Transaction tx(db);
    for (auto& [digest, minutes] : batch.stats) {
        int64_t requests = 0, last_ms = 0;
        for (auto& [minute, a] : minutes) {
            auto& st = db.cached(
                "INSERT INTO stats_minute(digest, minute, requests, prompt_tokens, cached_tokens, completion_tokens, "
                "errors, cold_loads, load_ms_total, ttft_hist, e2e_hist) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(digest, minute) DO UPDATE SET requests = requests + excluded.requests, "
                "prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
                "cached_tokens = cached_tokens + excluded.cached_tokens, "
                "completion_tokens = completion_tokens + excluded.completion_tokens, errors = errors + "
                "excluded.errors, "
                "cold_loads = cold_loads + excluded.cold_loads, load_ms_total = load_ms_total + "
                "excluded.load_ms_total, "
                "ttft_hist = loradesk_hist_add(ttft_hist, excluded.ttft_hist), "
                "e2e_hist = loradesk_hist_add(e2e_hist, excluded.e2e_hist)");
            st.bind_all(digest, minute, a.requests, a.prompt_tokens, a.cached_tokens, a.completion_tokens, a.errors,
                        a.cold_loads, a.load_ms_total);
            bind_hist(st, 10, a.ttft);
            bind_hist(st, 11, a.e2e);
            st.run();
            requests += a.requests;
            last_ms = std::max(last_ms, a.last_ms);
        }
        if (digest.empty()) continue;
        db.cached(
              "UPDATE adapters SET requests_total = requests_total + ?, last_used_unix = MAX(last_used_unix, ?) "
              "WHERE digest = ?")
            .bind_all(requests, last_ms / 1000, digest)
            .run();
    }
    for (auto& [digest, tier] : batch.tiers)
        db.cached("UPDATE adapters SET tier = ? WHERE digest = ?").bind_all(tier_name(tier), digest).run();
    auto insert_event = [&](int64_t time_ms, EventKind kind, const std::string& digest, const std::string& name,
                            const std::string& detail) {
        db.cached(
              "INSERT INTO events(time_ms, kind, adapter_id, name, detail) VALUES (?, ?, (SELECT id FROM adapters "
              "WHERE digest = ?), ?, ?)")
            .bind_all(time_ms, event_kind_name(kind), digest, name, detail)
            .run();
    };
    for (auto& e : batch.events) insert_event(e.time_ms, e.kind, e.digest, e.name, e.detail);
    if (batch.dropped_events > 0)
        insert_event(now_ms(), EventKind::error, "", "",
                     fmt::format("{} lifecycle events were dropped (the event queue was full)", batch.dropped_events));
    tx.commit();
}

}  // namespace loradesk::catalog
