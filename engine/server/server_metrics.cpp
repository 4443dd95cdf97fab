// Prometheus exposition of server and engine metrics; see server_metrics.h.
#include "server/server_metrics.h"

#include <fmt/format.h>

#include "server/engine_metrics.h"
#include "server/prometheus_text.h"

namespace loradesk::server {

Histogram ttft_histogram() { return Histogram{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}; }
Histogram latency_histogram() { return Histogram{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}; }

std::string escape_label_value(const std::string& value) { return prom::escape_label_value(value); }

void ServerMetrics::record_request(const std::string& adapter, const std::string& endpoint, int status) {
    std::lock_guard lock(m_mutex);
    ++m_requests[{adapter, endpoint, status}];
    m_adapters[adapter].last_active = Clock::now();
}

void ServerMetrics::record_finish(const std::string& adapter, const api::FinishEvent& finish) {
    std::lock_guard lock(m_mutex);
    PerAdapter& a = m_adapters[adapter];
    a.last_active = Clock::now();
    a.prompt_tokens += uint64_t(finish.usage.prompt_tokens);
    a.cached_tokens += uint64_t(finish.usage.cached_tokens);
    a.generated_tokens += uint64_t(finish.usage.completion_tokens);
    m_prompt_all += uint64_t(finish.usage.prompt_tokens);
    m_generated_all += uint64_t(finish.usage.completion_tokens);
    if (finish.usage.completion_tokens > 0) {
        a.ttft.observe(finish.ttft_ms / 1000.0);
        m_ttft_all.observe(finish.ttft_ms / 1000.0);
    }
    a.latency.observe(finish.latency_ms / 1000.0);
    m_latency_all.observe(finish.latency_ms / 1000.0);
}

bool ServerMetrics::active(const PerAdapter& a, Clock::time_point now) const {
    return m_window.count() == 0 || now - a.last_active <= m_window;
}

// Per-adapter request families for the adapters in `listed` (name -> listed); m_mutex held.
void ServerMetrics::render_requests(std::string& out, const std::map<std::string, bool>& listed) const {
    auto shown = [&](const std::string& adapter) {
        auto it = listed.find(adapter);
        return it != listed.end() && it->second;
    };
    prom::family(out, "loradesk_requests_total", "counter", "Finished HTTP generation requests.");
    for (const auto& [key, n] : m_requests)
        if (shown(std::get<0>(key)))
            prom::sample(out, "loradesk_requests_total",
                         {{"adapter", std::get<0>(key)},
                          {"endpoint", std::get<1>(key)},
                          {"code", std::to_string(std::get<2>(key))}},
                         double(n));
    auto counter = [&](const char* name, const char* help, uint64_t PerAdapter::*field) {
        prom::family(out, name, "counter", help);
        for (const auto& [adapter, a] : m_adapters)
            if (shown(adapter)) prom::sample(out, name, {{"adapter", adapter}}, double(a.*field));
    };
    counter("loradesk_prompt_tokens_total", "Prompt tokens processed.", &PerAdapter::prompt_tokens);
    counter("loradesk_cached_prompt_tokens_total", "Prompt tokens served from the prefix cache.",
            &PerAdapter::cached_tokens);
    counter("loradesk_generation_tokens_total", "Tokens generated.", &PerAdapter::generated_tokens);
    prom::family(out, "loradesk_time_to_first_token_seconds", "histogram", "Time to first token.");
    for (const auto& [adapter, a] : m_adapters)
        if (shown(adapter))
            prom::histogram(out, "loradesk_time_to_first_token_seconds", {{"adapter", adapter}}, a.ttft);
    prom::family(out, "loradesk_e2e_request_latency_seconds", "histogram", "End-to-end request latency.");
    for (const auto& [adapter, a] : m_adapters)
        if (shown(adapter))
            prom::histogram(out, "loradesk_e2e_request_latency_seconds", {{"adapter", adapter}}, a.latency);
}

std::string ServerMetrics::render(const api::Engine& engine) const {
    const std::vector<api::AdapterInfo> adapters = engine.adapters();
    const api::EngineStats stats = engine.stats();
    const api::ModelInfo model = engine.model();
    const auto now = Clock::now();
    std::string out;
    RequestTotals totals;
    // Which adapters get series: the active ones (see set_adapter_window) and the base model.
    std::map<std::string, bool> listed{{"base", true}};
    {
        std::lock_guard lock(m_mutex);
        for (const auto& [name, a] : m_adapters) listed[name] = active(a, now);
        for (const auto& a : adapters)
            if (a.running || a.waiting || a.pinned || a.tier == api::Tier::gpu || m_window.count() == 0)
                listed[a.name] = true;
        render_requests(out, listed);
        totals = {m_ttft_all, m_latency_all, m_prompt_all, m_generated_all};
    }
    std::vector<const api::AdapterInfo*> shown;
    for (const auto& a : adapters)
        if (listed[a.name]) shown.push_back(&a);
    render_adapter_gauges(out, shown, stats);
    render_engine_metrics(out, stats);
    render_vllm_metrics(out, stats, model, totals);
    return out;
}

}  // namespace loradesk::server
