// Engine-wide Prometheus families (scheduler, steps, KV cache, adapter tiers and movements), the per-adapter
// residency gauges, and the same quantities under vLLM's metric names, so that dashboards and LoRA-affinity
// routers written for vLLM (vllm:lora_requests_info, vllm:num_requests_waiting, vllm:kv_cache_usage_perc)
// read loradesk unchanged. Pure functions of snapshots; server_metrics.cpp puts the exposition together.
#pragma once

#include <string>
#include <vector>

#include "api/engine.h"
#include "core/histogram.h"

namespace loradesk::server {

// What the HTTP layer measured over every adapter together.
struct RequestTotals {
    Histogram ttft, latency;
    uint64_t prompt_tokens = 0, generated_tokens = 0;
};

void render_adapter_gauges(std::string& out, const std::vector<const api::AdapterInfo*>& adapters,
                           const api::EngineStats& stats);
void render_engine_metrics(std::string& out, const api::EngineStats& stats);
void render_vllm_metrics(std::string& out, const api::EngineStats& stats, const api::ModelInfo& model,
                         const RequestTotals& totals);

}  // namespace loradesk::server
