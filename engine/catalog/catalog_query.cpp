// Catalog reads: name resolution, filtered/sorted listing, one adapter's detail, statistics series.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "catalog/catalog.h"
#include "catalog/catalog_text.h"
#include "catalog/latency_histogram.h"
#include "core/error.h"

namespace loradesk::catalog {
namespace {

constexpr const char* kRecordColumns =
    "n.name, a.digest, COALESCE(v.path, a.path), a.declared_base, COALESCE(b.name, ''), a.compat, a.compat_reason, "
    "a.rank, a.alpha, "
    "a.rslora, a.targets, a.layers, a.size_bytes, a.dtype, a.created_unix, a.last_used_unix, a.pinned, a.notes, "
    "a.tier, a.missing, a.requests_total, n.version "
    "FROM names n JOIN adapters a ON a.id = n.adapter_id LEFT JOIN base_models b ON b.id = a.base_model_id "
    // The name's own folder: two names may share content (one adapters row) from different folders.
    "LEFT JOIN versions v ON v.name = n.name AND v.version = n.version ";

AdapterRecord read_record(const Statement& st) {
    AdapterRecord r;
    r.name = st.column_text(0);
    r.digest = st.column_text(1);
    r.path = st.column_text(2);
    r.declared_base = st.column_text(3);
    r.checked_base = st.column_text(4);
    r.compat = parse_compat(st.column_text(5));
    r.compat_reason = st.column_text(6);
    r.rank = int(st.column_int(7));
    r.alpha = st.column_double(8);
    r.rslora = st.column_int(9) != 0;
    r.targets = split_list(st.column_text(10));
    r.layers = split_int_list(st.column_text(11));
    r.size_bytes = st.column_int(12);
    r.dtype = st.column_text(13);
    r.created_unix = st.column_int(14);
    r.last_used_unix = st.column_int(15);
    r.pinned = st.column_int(16) != 0;
    r.notes = st.column_text(17);
    parse_tier(st.column_text(18), &r.tier);
    r.missing = st.column_int(19) != 0;
    r.requests_total = st.column_int(20);
    r.version = int(st.column_int(21));
    return r;
}

std::string order_clause(SortKey key, bool reverse) {
    const char* asc = reverse ? "DESC" : "ASC";
    const char* desc = reverse ? "ASC" : "DESC";
    switch (key) {
        case SortKey::name:
            return fmt::format("ORDER BY n.name COLLATE NOCASE {0}, n.name {0}", asc);
        case SortKey::last_used:
            return fmt::format("ORDER BY a.last_used_unix {}, n.name", desc);
        case SortKey::requests:
            return fmt::format("ORDER BY a.requests_total {}, n.name", desc);
        case SortKey::size:
            return fmt::format("ORDER BY a.size_bytes {}, n.name", desc);
    }
    return "";
}

}  // namespace

std::optional<std::string> Catalog::resolve(const std::string& name_or_alias) {
    ReadScope scope(*m_db);
    auto& st =
        m_db->cached("SELECT name FROM names WHERE name = ?1 UNION ALL SELECT name FROM aliases WHERE alias = ?1");
    st.bind(1, name_or_alias);
    if (!st.step()) return std::nullopt;
    return st.column_text(0);
}

std::string Catalog::require_name(const std::string& name_or_alias) {
    auto name = resolve(name_or_alias);
    if (!name)
        throw_expected(ErrorCode::not_found, fmt::format("no adapter or alias '{}' in the catalog (see `loradeskd "
                                                         "catalog list`, or import it first)",
                                                         name_or_alias));
    return *name;
}

std::optional<std::string> Catalog::setting(const std::string& key) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached("SELECT value FROM settings WHERE key = ?");
    st.bind(1, key);
    if (!st.step()) return std::nullopt;
    return st.column_text(0);
}

bool Catalog::is_ignored(const std::string& path) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached("SELECT 1 FROM ignored_paths WHERE path = ?");
    st.bind(1, path);
    return st.step();
}

std::string Catalog::current_signature(const std::string& path) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached(
        "SELECT a.signature FROM adapters a WHERE a.path = ? AND a.missing = 0 AND "
        "EXISTS(SELECT 1 FROM names n WHERE n.adapter_id = a.id)");
    st.bind(1, path);
    return st.step() ? st.column_text(0) : std::string();
}

std::vector<AdapterRecord> Catalog::list(const ListQuery& query) {
    ReadScope scope(*m_db);
    // With runtime tiers the tier filter (and so the page window) is applied here rather than in SQL.
    bool tier_in_sql = query.runtime_tiers.empty();
    std::string sql = std::string("SELECT ") + kRecordColumns +
                      "WHERE (?1 = '' OR instr(lower(n.name), lower(?1)) > 0) "
                      "AND (?2 = '' OR a.declared_base = ?2 OR b.name = ?2) "
                      "AND (?3 < 0 OR a.pinned = ?3) AND (?4 = '' OR a.tier = ?4) " +
                      order_clause(query.sort, query.reverse) + " LIMIT ?5 OFFSET ?6";
    auto& st = m_db->cached(sql);
    st.bind(1, query.name_contains).bind(2, query.base_model);
    st.bind(3, int64_t(query.pinned ? (*query.pinned ? 1 : 0) : -1));
    st.bind(4, tier_in_sql && query.tier ? tier_name(*query.tier) : std::string_view());
    st.bind(5, int64_t(tier_in_sql && query.limit > 0 ? query.limit : -1));
    st.bind(6, int64_t(tier_in_sql ? query.offset : 0));
    std::vector<AdapterRecord> out;
    while (st.step()) {
        AdapterRecord r = read_record(st);
        if (!tier_in_sql) {
            if (auto it = query.runtime_tiers.find(r.digest); it != query.runtime_tiers.end()) r.tier = it->second;
            if (query.tier && r.tier != *query.tier) continue;
        }
        out.push_back(std::move(r));
    }
    if (!tier_in_sql) {
        std::size_t begin = std::min(out.size(), std::size_t(std::max(0, query.offset)));
        std::size_t end = query.limit > 0 ? std::min(out.size(), begin + std::size_t(query.limit)) : out.size();
        out = std::vector<AdapterRecord>(std::make_move_iterator(out.begin() + begin),
                                         std::make_move_iterator(out.begin() + end));
    }
    return out;
}

std::optional<AdapterRecord> Catalog::find(const std::string& name_or_alias) {
    auto name = resolve(name_or_alias);
    if (!name) return std::nullopt;
    ReadScope scope(*m_db);
    auto& st = m_db->cached(std::string("SELECT ") + kRecordColumns + "WHERE n.name = ?");
    st.bind(1, *name);
    if (!st.step()) return std::nullopt;
    return read_record(st);
}

AdapterDetail Catalog::show(const std::string& name_or_alias, int n_events) {
    auto record = find(name_or_alias);
    if (!record) require_name(name_or_alias);  // throws the not_found error
    ReadScope scope(*m_db);
    AdapterDetail d;
    d.adapter = std::move(*record);
    auto& v = m_db->cached(
        "SELECT v.version, a.digest, v.path, v.created_unix FROM versions v JOIN adapters a ON "
        "a.id = v.adapter_id WHERE v.name = ? ORDER BY v.version");
    v.bind(1, d.adapter.name);
    while (v.step())
        d.versions.push_back({int(v.column_int(0)), v.column_text(1), v.column_text(2), v.column_int(3),
                              v.column_int(0) == d.adapter.version});
    auto& al = m_db->cached("SELECT alias FROM aliases WHERE name = ? ORDER BY alias");
    al.bind(1, d.adapter.name);
    while (al.step()) d.aliases.push_back(al.column_text(0));
    auto& ev = m_db->cached(
        "SELECT e.time_ms, e.kind, e.name, COALESCE(a.digest, ''), e.detail FROM events e LEFT JOIN adapters a ON "
        "a.id = e.adapter_id WHERE e.name = ?1 OR e.adapter_id IN (SELECT adapter_id FROM versions WHERE name = ?1) "
        "ORDER BY e.id DESC LIMIT ?2");
    ev.bind(1, d.adapter.name).bind(2, n_events);
    while (ev.step()) {
        EventRecord e{ev.column_int(0), EventKind::error, ev.column_text(2), ev.column_text(3), ev.column_text(4)};
        parse_event_kind(ev.column_text(1), &e.kind);
        d.events.push_back(std::move(e));
    }
    return d;
}

namespace {

struct MinuteRow {
    StatsPoint point;
    LatencyHistogram ttft, e2e;
};

MinuteRow read_minute(const Statement& st) {
    MinuteRow r;
    r.point.minute = st.column_int(0);
    r.point.requests = st.column_int(1);
    r.point.prompt_tokens = st.column_int(2);
    r.point.cached_tokens = st.column_int(3);
    r.point.completion_tokens = st.column_int(4);
    r.point.errors = st.column_int(5);
    r.point.cold_loads = st.column_int(6);
    r.point.load_ms_total = st.column_double(7);
    auto t = st.column_blob(8), e = st.column_blob(9);
    r.ttft = LatencyHistogram::decode(t.data(), t.size());
    r.e2e = LatencyHistogram::decode(e.data(), e.size());
    return r;
}

void set_quantiles(StatsPoint& p, const LatencyHistogram& ttft, const LatencyHistogram& e2e) {
    p.ttft_p50_ms = ttft.quantile(0.50);
    p.ttft_p95_ms = ttft.quantile(0.95);
    p.e2e_p50_ms = e2e.quantile(0.50);
    p.e2e_p95_ms = e2e.quantile(0.95);
}

constexpr const char* kMinuteSql =
    "SELECT minute, requests, prompt_tokens, cached_tokens, completion_tokens, errors, cold_loads, load_ms_total, "
    "ttft_hist, e2e_hist FROM stats_minute WHERE digest = ? AND minute BETWEEN ? AND ? ORDER BY minute";

}  // namespace

std::vector<StatsPoint> Catalog::stats_series(const std::string& digest, int64_t from_minute, int64_t to_minute) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached(kMinuteSql);
    st.bind(1, digest).bind(2, from_minute).bind(3, to_minute);
    std::vector<StatsPoint> out;
    while (st.step()) {
        MinuteRow r = read_minute(st);
        set_quantiles(r.point, r.ttft, r.e2e);
        out.push_back(r.point);
    }
    return out;
}

StatsPoint Catalog::stats_total(const std::string& digest, int64_t from_minute, int64_t to_minute) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached(kMinuteSql);
    st.bind(1, digest).bind(2, from_minute).bind(3, to_minute);
    StatsPoint total;
    total.minute = from_minute;
    LatencyHistogram ttft, e2e;
    while (st.step()) {
        MinuteRow r = read_minute(st);
        total.requests += r.point.requests;
        total.prompt_tokens += r.point.prompt_tokens;
        total.cached_tokens += r.point.cached_tokens;
        total.completion_tokens += r.point.completion_tokens;
        total.errors += r.point.errors;
        total.cold_loads += r.point.cold_loads;
        total.load_ms_total += r.point.load_ms_total;
        ttft.merge(r.ttft);
        e2e.merge(r.e2e);
    }
    set_quantiles(total, ttft, e2e);
    return total;
}

}  // namespace loradesk::catalog
