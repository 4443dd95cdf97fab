// Request metrics the HTTP layer records (per adapter: requests by endpoint and status, prompt / cached /
// generated tokens, TTFT and latency histograms) and the whole Prometheus text exposition (format 0.0.4):
// these, the engine-wide families (engine_metrics.h) and vLLM's names for the same quantities. Per-adapter
// series are written only for adapters active within a window, so /metrics stays small with thousands
// of catalogued adapters. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "api/engine.h"
#include "core/histogram.h"

namespace loradesk::server {

Histogram ttft_histogram();     // the TTFT buckets (seconds), vLLM's
Histogram latency_histogram();  // the end-to-end latency buckets (seconds)

class ServerMetrics {
  public:
    // Per-adapter series cover adapters that are running, waiting, on the GPU, pinned, or that served a
    // request within `window`; 0 = every adapter.
    void set_adapter_window(std::chrono::seconds window) { m_window = window; }

    // `adapter` is the resolved adapter name, "base" for the base model.
    void record_request(const std::string& adapter, const std::string& endpoint, int status);
    void record_finish(const std::string& adapter, const api::FinishEvent& finish);

    // The whole exposition, including engine gauges read now.
    std::string render(const api::Engine& engine) const;

  private:
    using Clock = std::chrono::steady_clock;
    struct PerAdapter {
        uint64_t prompt_tokens = 0;
        uint64_t cached_tokens = 0;
        uint64_t generated_tokens = 0;
        Histogram ttft = ttft_histogram();
        Histogram latency = latency_histogram();
        Clock::time_point last_active{};
    };
    bool active(const PerAdapter& a, Clock::time_point now) const;
    void render_requests(std::string& out, const std::map<std::string, bool>& listed) const;

    std::chrono::seconds m_window{600};
    mutable std::mutex m_mutex;
    std::map<std::tuple<std::string, std::string, int>, uint64_t> m_requests;
    std::map<std::string, PerAdapter> m_adapters;
    Histogram m_ttft_all = ttft_histogram(), m_latency_all = latency_histogram();  // every adapter together
    uint64_t m_prompt_all = 0, m_generated_all = 0;
};

// Escapes a label value (\\, \", \n) for the text format.
std::string escape_label_value(const std::string& value);

}  // namespace loradesk::server
