// Request metrics the HTTP layer records (per adapter: requests by endpoint and status, prompt / cached /
// generated tokens, TTFT and latency histograms) and their Prometheus text exposition (format 0.0.4),
// together with the engine's live gauges (running, waiting, residency, KV usage). Thread-safe.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "api/engine.h"

namespace loradesk::server {

inline constexpr std::array<double, 12> kTtftBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
inline constexpr std::array<double, 12> kLatencyBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

struct Histogram {
    std::array<uint64_t, 12> counts{};  // per bucket (not cumulative)
    uint64_t count = 0;
    double sum = 0;
    void observe(const std::array<double, 12>& bounds, double value);
};

class ServerMetrics {
public:
    // `adapter` is the resolved adapter name, "base" for the base model.
    void record_request(const std::string& adapter, const std::string& endpoint, int status);
    void record_finish(const std::string& adapter, const api::FinishEvent& finish);

    // The whole exposition, including engine gauges read now.
    std::string render(const api::Engine& engine) const;

private:
    struct PerAdapter {
        uint64_t prompt_tokens = 0;
        uint64_t cached_tokens = 0;
        uint64_t generated_tokens = 0;
        Histogram ttft;
        Histogram latency;
    };
    mutable std::mutex m_mutex;
    std::map<std::tuple<std::string, std::string, int>, uint64_t> m_requests;
    std::map<std::string, PerAdapter> m_adapters;
};

// Escapes a label value (\\, \", \n) for the text format.
std::string escape_label_value(const std::string& value);

}  // namespace loradesk::server
