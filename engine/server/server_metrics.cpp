// Prometheus exposition of server and engine metrics; see server_metrics.h.
#include "server/server_metrics.h"

#include <fmt/format.h>

namespace loradesk::server {

void Histogram::observe(const std::array<double, 12>& bounds, double value) {
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        if (value <= bounds[i]) {
            ++counts[i];
            break;
        }
    }
    ++count;
    sum += value;
}

std::string escape_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

void ServerMetrics::record_request(const std::string& adapter, const std::string& endpoint, int status) {
    std::lock_guard lock(m_mutex);
    ++m_requests[{adapter, endpoint, status}];
}

void ServerMetrics::record_finish(const std::string& adapter, const api::FinishEvent& finish) {
    std::lock_guard lock(m_mutex);
    PerAdapter& a = m_adapters[adapter];
    a.prompt_tokens += uint64_t(finish.usage.prompt_tokens);
    a.cached_tokens += uint64_t(finish.usage.cached_tokens);
    a.generated_tokens += uint64_t(finish.usage.completion_tokens);
    if (finish.usage.completion_tokens > 0) a.ttft.observe(kTtftBuckets, finish.ttft_ms / 1000.0);
    a.latency.observe(kLatencyBuckets, finish.latency_ms / 1000.0);
}

namespace {

std::string num(double v) { return fmt::format("{}", v); }

void family(std::string& out, const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void histogram(std::string& out, const char* name, const std::string& adapter, const std::array<double, 12>& bounds,
               const Histogram& h) {
    const std::string label = escape_label_value(adapter);
    uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += h.counts[i];
        out += fmt::format("{}_bucket{{adapter=\"{}\",le=\"{}\"}} {}\n", name, label, num(bounds[i]), cumulative);
    }
    out += fmt::format("{}_bucket{{adapter=\"{}\",le=\"+Inf\"}} {}\n", name, label, h.count);
    out += fmt::format("{}_sum{{adapter=\"{}\"}} {}\n", name, label, num(h.sum));
    out += fmt::format("{}_count{{adapter=\"{}\"}} {}\n", name, label, h.count);
}

}  // namespace

std::string ServerMetrics::render(const api::Engine& engine) const {
    const std::vector<api::AdapterInfo> adapters = engine.adapters();
    const api::EngineStats stats = engine.stats();
    std::string out;
    {
        std::lock_guard lock(m_mutex);
        family(out, "loradesk_requests_total", "counter", "Finished HTTP generation requests.");
        for (const auto& [key, n] : m_requests)
            out += fmt::format("loradesk_requests_total{{adapter=\"{}\",endpoint=\"{}\",code=\"{}\"}} {}\n",
                               escape_label_value(std::get<0>(key)), escape_label_value(std::get<1>(key)),
                               std::get<2>(key), n);
        auto counter = [&](const char* name, const char* help, uint64_t PerAdapter::*field) {
            family(out, name, "counter", help);
            for (const auto& [adapter, a] : m_adapters)
                out += fmt::format("{}{{adapter=\"{}\"}} {}\n", name, escape_label_value(adapter), a.*field);
        };
        counter("loradesk_prompt_tokens_total", "Prompt tokens processed.", &PerAdapter::prompt_tokens);
        counter("loradesk_cached_prompt_tokens_total", "Prompt tokens served from the prefix cache.",
                &PerAdapter::cached_tokens);
        counter("loradesk_generation_tokens_total", "Tokens generated.", &PerAdapter::generated_tokens);
        family(out, "loradesk_time_to_first_token_seconds", "histogram", "Time to first token.");
        for (const auto& [adapter, a] : m_adapters)
            histogram(out, "loradesk_time_to_first_token_seconds", adapter, kTtftBuckets, a.ttft);
        family(out, "loradesk_e2e_request_latency_seconds", "histogram", "End-to-end request latency.");
        for (const auto& [adapter, a] : m_adapters)
            histogram(out, "loradesk_e2e_request_latency_seconds", adapter, kLatencyBuckets, a.latency);
    }
    // Engine gauges: one series per adapter, the remainder attributed to the base model.
    int running_adapters = 0, waiting_adapters = 0;
    for (const auto& a : adapters) running_adapters += a.running, waiting_adapters += a.waiting;
    auto per_adapter_gauge = [&](const char* name, const char* help, int base_value, int api::AdapterInfo::*field) {
        family(out, name, "gauge", help);
        out += fmt::format("{}{{adapter=\"base\"}} {}\n", name, std::max(0, base_value));
        for (const auto& a : adapters)
            out += fmt::format("{}{{adapter=\"{}\"}} {}\n", name, escape_label_value(a.name), a.*field);
    };
    per_adapter_gauge("loradesk_requests_running", "Sequences currently decoding.", stats.running - running_adapters,
                      &api::AdapterInfo::running);
    per_adapter_gauge("loradesk_requests_waiting", "Sequences queued.", stats.waiting - waiting_adapters,
                      &api::AdapterInfo::waiting);
    family(out, "loradesk_adapter_loaded", "gauge", "Adapter resident on GPU (1) or not (0).");
    for (const auto& a : adapters)
        out += fmt::format("loradesk_adapter_loaded{{adapter=\"{}\",rank=\"{}\"}} {}\n", escape_label_value(a.name),
                           a.rank, a.tier == "gpu" ? 1 : 0);
    family(out, "loradesk_adapter_tier", "gauge", "Where each adapter is now (1 for its tier: gpu, cpu or disk).");
    for (const auto& a : adapters)
        for (const char* tier : {"gpu", "cpu", "disk"})
            out += fmt::format("loradesk_adapter_tier{{adapter=\"{}\",tier=\"{}\"}} {}\n", escape_label_value(a.name),
                               tier, a.tier == tier ? 1 : 0);
    family(out, "loradesk_adapter_pinned", "gauge", "Adapter pinned in memory (1) or evictable (0).");
    for (const auto& a : adapters)
        out += fmt::format("loradesk_adapter_pinned{{adapter=\"{}\"}} {}\n", escape_label_value(a.name),
                           a.pinned ? 1 : 0);
    family(out, "loradesk_gpu_lora_slots_used", "gauge", "Device adapter slots in use.");
    out += fmt::format("loradesk_gpu_lora_slots_used {}\n", stats.gpu_slots_used);
    family(out, "loradesk_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks in use.");
    const double used = stats.kv_pages_total > 0
                            ? double(stats.kv_pages_total - stats.kv_pages_free) / double(stats.kv_pages_total)
                            : 0.0;
    out += fmt::format("loradesk_kv_cache_usage_ratio {}\n", num(used));
    family(out, "loradesk_kv_cache_pages", "gauge", "KV pages by state (total, free, cached).");
    out += fmt::format("loradesk_kv_cache_pages{{state=\"total\"}} {}\n", stats.kv_pages_total);
    out += fmt::format("loradesk_kv_cache_pages{{state=\"free\"}} {}\n", stats.kv_pages_free);
    out += fmt::format("loradesk_kv_cache_pages{{state=\"cached\"}} {}\n", stats.kv_pages_cached);
    return out;
}

}  // namespace loradesk::server
