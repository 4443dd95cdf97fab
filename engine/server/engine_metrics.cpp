// Engine-wide and vLLM-named Prometheus families; see engine_metrics.h.
#include "server/engine_metrics.h"

#include <algorithm>
#include <chrono>

#include "server/prometheus_text.h"

namespace loradesk::server {

using prom::family;
using prom::sample;

namespace {

double kv_used_ratio(const api::EngineStats& s) {
    // Pages held only by the prefix cache are reusable at once: they count as free here, as in vLLM.
    const int used = s.kv_pages_total - s.kv_pages_free - s.kv_pages_cached;
    return s.kv_pages_total > 0 ? double(std::max(0, used)) / double(s.kv_pages_total) : 0.0;
}

std::string joined(const std::vector<std::pair<std::string, int>>& by_adapter) {
    std::string s;
    for (auto& [name, n] : by_adapter) s += (s.empty() ? "" : ",") + name;
    return s;
}

}  // namespace

void render_adapter_gauges(std::string& out, const std::vector<const api::AdapterInfo*>& adapters,
                           const api::EngineStats& stats) {
    // The base model's share is what the adapters do not account for.
    int running_adapters = 0, waiting_adapters = 0;
    for (const auto& [name, n] : stats.running_by_adapter) running_adapters += n;
    for (const auto& [name, n] : stats.waiting_by_adapter) waiting_adapters += n;
    auto per_adapter = [&](const char* name, const char* help, int base_value, int api::AdapterInfo::*field) {
        family(out, name, "gauge", help);
        sample(out, name, {{"adapter", "base"}}, std::max(0, base_value));
        for (const auto* a : adapters) sample(out, name, {{"adapter", a->name}}, a->*field);
    };
    per_adapter("loradesk_requests_running", "Sequences currently scheduled (prefill or decode).",
                stats.running - running_adapters, &api::AdapterInfo::running);
    per_adapter("loradesk_requests_waiting", "Sequences queued.", stats.waiting - waiting_adapters,
                &api::AdapterInfo::waiting);
    family(out, "loradesk_adapter_loaded", "gauge", "Adapter resident on GPU (1) or not (0).");
    for (const auto* a : adapters)
        sample(out, "loradesk_adapter_loaded", {{"adapter", a->name}, {"rank", std::to_string(a->rank)}},
               a->tier == api::Tier::gpu ? 1 : 0);
    family(out, "loradesk_adapter_tier", "gauge", "Where each adapter is now (1 for its tier: gpu, cpu or disk).");
    for (const auto* a : adapters)
        for (api::Tier tier : {api::Tier::gpu, api::Tier::cpu, api::Tier::disk})
            sample(out, "loradesk_adapter_tier", {{"adapter", a->name}, {"tier", std::string(api::tier_name(tier))}},
                   a->tier == tier ? 1 : 0);
    family(out, "loradesk_adapter_pinned", "gauge", "Adapter pinned in memory (1) or evictable (0).");
    for (const auto* a : adapters) sample(out, "loradesk_adapter_pinned", {{"adapter", a->name}}, a->pinned ? 1 : 0);
}

void render_engine_metrics(std::string& out, const api::EngineStats& s) {
    auto gauge = [&](const char* name, const char* help, double v) {
        family(out, name, "gauge", help);
        sample(out, name, {}, v);
    };
    auto counter = [&](const char* name, const char* help, double v) {
        family(out, name, "counter", help);
        sample(out, name, {}, v);
    };
    gauge("loradesk_engine_requests_running", "Sequences scheduled by the engine, every adapter together.", s.running);
    gauge("loradesk_engine_requests_waiting", "Sequences queued in the engine, every adapter together.", s.waiting);
    gauge("loradesk_engine_requests_swapped", "Waiting sequences that were preempted (KV recomputed on re-admission).",
          s.swapped);
    gauge("loradesk_requests_waiting_for_adapter",
          "Waiting sequences that only lack an adapter slot (max-loras reached or the adapter still loading).",
          s.waiting_for_adapter);
    family(out, "loradesk_preemptions_total", "counter", "Running sequences preempted, by reason.");
    sample(out, "loradesk_preemptions_total", {{"reason", "kv_cache_full"}}, double(s.preemptions_total));
    counter("loradesk_engine_steps_total", "Engine steps run.", double(s.steps_total));
    counter("loradesk_computed_tokens_total", "Tokens run through the model (prefill, decode and recompute).",
            double(s.computed_tokens_total));
    family(out, "loradesk_step_duration_seconds", "histogram", "Wall time of one engine step (plan to commit).");
    prom::histogram(out, "loradesk_step_duration_seconds", {}, s.step_seconds);
    family(out, "loradesk_step_batch_size", "histogram", "Sequences in one engine step.");
    prom::histogram(out, "loradesk_step_batch_size", {}, s.batch_size);
    family(out, "loradesk_step_tokens", "histogram", "Tokens of one engine step, prefill (prompt chunks) or decode.");
    prom::histogram(out, "loradesk_step_tokens", {{"kind", "prefill"}}, s.prefill_tokens_per_step);
    prom::histogram(out, "loradesk_step_tokens", {{"kind", "decode"}}, s.decode_tokens_per_step);
    family(out, "loradesk_step_phase_seconds_total", "counter", "Engine loop time by step phase.");
    sample(out, "loradesk_step_phase_seconds_total", {{"phase", "plan"}}, s.plan_seconds_total);
    sample(out, "loradesk_step_phase_seconds_total", {{"phase", "forward"}}, s.forward_seconds_total);
    sample(out, "loradesk_step_phase_seconds_total", {{"phase", "sample"}}, s.sample_seconds_total);
    sample(out, "loradesk_step_phase_seconds_total", {{"phase", "commit"}}, s.commit_seconds_total);
    family(out, "loradesk_sampled_rows_total", "counter",
           "Logits rows sampled: on the device (greedy argmax) or copied whole to the host sampler.");
    sample(out, "loradesk_sampled_rows_total", {{"where", "device"}},
           double(s.sampled_rows_total - s.host_sampled_rows_total));
    sample(out, "loradesk_sampled_rows_total", {{"where", "host"}}, double(s.host_sampled_rows_total));

    gauge("loradesk_gpu_lora_slots_used", "Device adapter slots in use.", s.gpu_slots_used);
    gauge("loradesk_gpu_lora_slots", "Device adapter slots (max-loras).", s.max_loras);
    gauge("loradesk_cpu_lora_adapters", "Adapters held in host memory.", s.cpu_adapters);
    family(out, "loradesk_adapter_load_seconds", "histogram",
           "Adapter movements: disk -> host reads (with preparation for the device) and host -> GPU slot uploads.");
    prom::histogram(out, "loradesk_adapter_load_seconds", {{"from", "disk"}, {"to", "cpu"}},
                    s.adapter_disk_to_host_seconds);
    prom::histogram(out, "loradesk_adapter_load_seconds", {{"from", "cpu"}, {"to", "gpu"}},
                    s.adapter_host_to_device_seconds);
    counter("loradesk_adapter_load_failures_total", "Adapter reads that failed.", double(s.adapter_load_failures));
    family(out, "loradesk_adapter_evictions_total", "counter", "Adapters evicted, by tier.");
    sample(out, "loradesk_adapter_evictions_total", {{"tier", "cpu"}}, double(s.adapter_host_evictions));
    sample(out, "loradesk_adapter_evictions_total", {{"tier", "gpu"}}, double(s.adapter_device_evictions));

    family(out, "loradesk_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks in use (cached pages count as used).");
    const double used =
        s.kv_pages_total > 0 ? double(s.kv_pages_total - s.kv_pages_free) / double(s.kv_pages_total) : 0.0;
    sample(out, "loradesk_kv_cache_usage_ratio", {}, used);
    family(out, "loradesk_kv_cache_pages", "gauge", "KV pages by state (total, free, cached, used by sequences).");
    sample(out, "loradesk_kv_cache_pages", {{"state", "total"}}, s.kv_pages_total);
    sample(out, "loradesk_kv_cache_pages", {{"state", "free"}}, s.kv_pages_free);
    sample(out, "loradesk_kv_cache_pages", {{"state", "cached"}}, s.kv_pages_cached);
    sample(out, "loradesk_kv_cache_pages", {{"state", "used"}},
           std::max(0, s.kv_pages_total - s.kv_pages_free - s.kv_pages_cached));
}

void render_vllm_metrics(std::string& out, const api::EngineStats& s, const api::ModelInfo& model,
                         const RequestTotals& t) {
    const prom::Labels m{{"model_name", model.id}};
    auto gauge = [&](const char* name, const char* help, double v) {
        family(out, name, "gauge", help);
        sample(out, name, m, v);
    };
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", s.running);
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", s.waiting);
    gauge("vllm:num_requests_swapped", "Number of requests swapped out (preempted, waiting for recompute).", s.swapped);
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kv_used_ratio(s));
    gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (older name).", kv_used_ratio(s));
    // As vLLM: the value is the time of the snapshot, the adapters are in the labels (routers read the
    // newest sample).
    family(out, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
    const double now = double(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    sample(out, "vllm:lora_requests_info",
           {{"running_lora_adapters", joined(s.running_by_adapter)},
            {"waiting_lora_adapters", joined(s.waiting_by_adapter)},
            {"max_lora", std::to_string(s.max_loras)}},
           now);
    auto counter = [&](const char* name, const char* help, double v) {
        family(out, name, "counter", help);
        sample(out, name, m, v);
    };
    counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.",
            double(s.preemptions_total));
    counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", double(t.prompt_tokens));
    counter("vllm:generation_tokens_total", "Number of generation tokens processed.", double(t.generated_tokens));
    family(out, "vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
    prom::histogram(out, "vllm:time_to_first_token_seconds", m, t.ttft);
    family(out, "vllm:e2e_request_latency_seconds", "histogram", "Histogram of end to end request latency in seconds.");
    prom::histogram(out, "vllm:e2e_request_latency_seconds", m, t.latency);
}

}  // namespace loradesk::server
