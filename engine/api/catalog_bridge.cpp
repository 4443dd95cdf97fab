#include "api/catalog_bridge.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "lora/adapter_summary.h"

namespace loradesk::api {
namespace {

std::string format_time_ms(int64_t ms) {
    std::time_t t = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

}  // namespace

CatalogBridge::CatalogBridge(const std::string& data_dir, const std::string& model_id, const std::string& model_path,
                             const std::string& architecture, bool start_fresh)
    : m_model_id(model_id) {
    std::string db = catalog::catalog_path_in(data_dir, true);
    catalog::CatalogOptions options;
    options.start_fresh_if_corrupt = start_fresh;
    m_catalog = std::make_unique<catalog::Catalog>(db, options);
    m_catalog->register_base_model(model_id, model_path, architecture);
    m_sink = std::make_unique<catalog::StatsSink>(db);
}

void CatalogBridge::register_adapter(const lora::AdapterSummary& summary, const catalog::Compatibility& compat) {
    std::lock_guard lock(m_mutex);
    m_catalog->register_adapter(
        summary, compat, summary.signature.empty() ? catalog::folder_signature(summary.path) : summary.signature);
}

std::optional<catalog::FolderDigest> CatalogBridge::folder_digest(const std::string& path) {
    std::lock_guard lock(m_mutex);
    return m_catalog->folder_digest(path);
}

void CatalogBridge::put_folder_digest(const catalog::FolderDigest& entry) {
    std::lock_guard lock(m_mutex);
    m_catalog->put_folder_digest(entry);
}

void CatalogBridge::forget_folder_digest(const std::string& path) {
    std::lock_guard lock(m_mutex);
    m_catalog->forget_folder_digest(path);
}

std::map<std::string, catalog::FolderDigest> CatalogBridge::folder_digests() {
    std::lock_guard lock(m_mutex);
    return m_catalog->folder_digests();
}

std::map<std::string, int64_t> CatalogBridge::content_created_times() {
    std::lock_guard lock(m_mutex);
    return m_catalog->content_created_times();
}

void CatalogBridge::register_adapters(const std::vector<catalog::AdapterRegistration>& batch) {
    if (batch.empty()) return;
    std::lock_guard lock(m_mutex);
    m_catalog->register_adapters(batch);
}

int64_t CatalogBridge::content_created_unix(const std::string& digest) {
    std::lock_guard lock(m_mutex);
    return m_catalog->content_created_unix(digest);
}

catalog::ImportReport CatalogBridge::import_path(const std::string& path, const catalog::CompatibilityCheck& compat) {
    std::lock_guard lock(m_mutex);
    return catalog::import_path(*m_catalog, path, lora::summarize_adapter, compat);
}

void CatalogBridge::remove(const std::string& name) {
    std::lock_guard lock(m_mutex);
    if (m_catalog->resolve(name)) m_catalog->remove_adapter(name);
}

void CatalogBridge::mark_missing(const std::string& name, const std::string& path) {
    std::lock_guard lock(m_mutex);
    auto rec = m_catalog->find(name);
    if (rec && rec->name == name && rec->path == path) m_catalog->set_missing(name, true);
}

void CatalogBridge::set_pinned(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    if (m_catalog->resolve(name)) m_catalog->set_pinned(name, pinned);
}

void CatalogBridge::set_alias(const std::string& alias, const std::string& name) {
    std::lock_guard lock(m_mutex);
    if (m_catalog->resolve(name)) m_catalog->set_alias(alias, name);
}

void CatalogBridge::event(catalog::EventKind kind, const std::string& digest, const std::string& name,
                          const std::string& detail) {
    m_sink->record_event(kind, digest, name, detail);
}

std::vector<catalog::AdapterRecord> CatalogBridge::servable_adapters() {
    std::lock_guard lock(m_mutex);
    std::vector<catalog::AdapterRecord> out;
    for (auto& r : m_catalog->list()) {
        std::error_code ec;
        if (!r.missing && std::filesystem::exists(std::filesystem::path(r.path) / "adapter_config.json", ec))
            out.push_back(std::move(r));
    }
    return out;
}

AdapterDetails CatalogBridge::details(const std::string& name_or_alias) {
    std::lock_guard lock(m_mutex);
    catalog::AdapterDetail d = m_catalog->show(name_or_alias);  // throws not_found
    AdapterDetails out;
    const auto& r = d.adapter;
    out.info.name = r.name;
    out.info.aliases = d.aliases;
    out.info.digest = r.digest;
    out.info.path = r.path;
    out.info.base_model = r.declared_base;
    out.info.rank = r.rank;
    out.info.alpha = float(r.alpha);
    out.info.rslora = r.rslora;
    out.info.targets = r.targets;
    out.info.size_bytes = std::size_t(r.size_bytes);
    out.info.pinned = r.pinned;
    out.info.compatible = r.compat != catalog::Compat::incompatible;
    out.info.incompatibility = r.compat_reason;
    out.info.requests_total = uint64_t(r.requests_total);
    out.info.last_used_unix = r.last_used_unix;
    out.info.created_unix = r.created_unix;
    try {
        out.config =
            nlohmann::json::parse(read_text_file((std::filesystem::path(r.path) / "adapter_config.json").string()));
    } catch (const std::exception&) {
        out.config = nullptr;  // the folder is gone or unreadable; the catalog still knows the rest
    }
    for (auto& v : d.versions) out.versions.push_back({v.digest, v.created_unix, v.current});
    for (auto& e : d.events)
        out.recent_events.push_back(format_time_ms(e.time_ms) + " " + std::string(catalog::event_kind_name(e.kind)) +
                                    (e.detail.empty() ? "" : " " + e.detail));
    return out;
}

std::vector<StatsPoint> CatalogBridge::history(const std::string& name_or_alias, int minutes) {
    std::lock_guard lock(m_mutex);
    auto rec = m_catalog->find(name_or_alias);
    if (!rec) throw_expected(ErrorCode::not_found, "no adapter named '" + name_or_alias + "' in the catalog");
    int64_t now_minute =
        std::chrono::duration_cast<std::chrono::minutes>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<StatsPoint> out;
    for (auto& p : m_catalog->stats_series(rec->digest, now_minute - minutes + 1, now_minute)) {
        StatsPoint s;
        s.minute_unix = p.minute * 60;
        s.requests = uint64_t(p.requests);
        s.prompt_tokens = uint64_t(p.prompt_tokens);
        s.cached_tokens = uint64_t(p.cached_tokens);
        s.completion_tokens = uint64_t(p.completion_tokens);
        s.errors = uint64_t(p.errors);
        s.ttft_p50_ms = p.ttft_p50_ms;
        s.ttft_p95_ms = p.ttft_p95_ms;
        s.latency_p50_ms = p.e2e_p50_ms;
        s.latency_p95_ms = p.e2e_p95_ms;
        out.push_back(s);
    }
    return out;
}

}  // namespace loradesk::api
