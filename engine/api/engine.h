// The Engine facade: the one interface that the HTTP server, the Qt UI and loradeskd use.
// Thread-safe: every method may be called from any thread. Never throws: failures come back as
// Status / Result<T> / ErrorEvent with an ErrorCode that maps onto HTTP statuses and UI messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/histogram.h"
#include "core/result.h"

namespace loradesk::api {

// ---- options ----------------------------------------------------------------------------------

struct EngineOptions {
    std::string model_dir;                  // Hugging Face model folder
    std::string served_model_id;            // the id /v1/models lists; empty = the folder's name
    std::vector<std::string> adapter_dirs;  // each subfolder with adapter_config.json is registered by name
    std::vector<std::pair<std::string, std::string>> named_adapters;  // (name, dir) registered as given
    std::string device = "auto";                                      // auto | cpu | cuda
    std::string data_dir;                                             // catalog, logs; empty = no catalog (tests)
    bool catalog_start_fresh = false;  // a damaged catalog is moved aside and a new one started
    // Distinct adapters in one batch = device slots; <= 0: planned from GPU memory (up to 8), 4 on the CPU.
    int max_loras = 0;
    int max_loras_cpu = 4096;  // adapters kept in host memory (max_cpu_lora_bytes bounds them first)
    std::size_t max_cpu_lora_bytes = std::size_t(8) << 30;  // host-tier budget (--host-lora-memory)
    int max_lora_rank = 64;
    // KV page pool budget in GB; <= 0: on a GPU, everything the plan leaves (gpu_memory_utilization), on the
    // CPU runner 0.5 GB.
    double kv_memory_gb = 0;
    double gpu_memory_utilization = 0.9;  // fraction of the GPU the engine may take in all
    std::string chat_template_file;       // overrides the model's chat template (a Jinja file)
    int page_size = 16;
    int max_batch_tokens = 2048;  // token budget per step (prefill chunks + decodes)
    int max_running = 256;        // sequences decoding at once
    // Admission headroom: tokens of growth per running sequence that must still fit the KV cache before a
    // new request is admitted (see sched::CapacityConfig::reserve_tokens).
    int kv_reserve_tokens = 0;
    int max_waiting = 4096;       // queued requests before submit() answers capacity
    std::string policy = "fcfs";  // fcfs | pack
    int cpu_threads = 0;          // 0 = all cores
    // Block-scaled fp8 models on the CUDA runner: keep activations in bf16 (the weight-only kernels) instead of the
    // W8A8 fp8 GEMM from 3 tokens per step (CudaRunnerOptions::fp8_w8a8): slower batches and prefill, numerics that do
    // not depend on the batch size.
    bool fp8_weight_only = false;
    int max_context = 0;  // 0 = model's max_position_embeddings
    // How often adapter_dirs are polled for adapter folders that appeared, changed or vanished while
    // the engine runs; 0 = only at startup.
    int adapter_watch_interval_ms = 2000;
};

// ---- requests and events ----------------------------------------------------------------------

struct SamplingParams {
    float temperature = 1.0f;  // 0 = greedy
    float top_p = 1.0f;
    int top_k = 0;  // 0 or -1 = off
    float min_p = 0.0f;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    float repetition_penalty = 1.0f;
    std::optional<uint64_t> seed;  // reproducible per request when set
    std::map<int32_t, float> logit_bias;
};

struct StopParams {
    // Completion tokens; clipped by the context unless strict_max_tokens. 0 only with prompt_logprobs >= 0:
    // the prompt is scored and nothing generated (finish reason length).
    int max_tokens = 256;
    // The client asked for max_tokens explicitly: prompt + max_tokens beyond the context is refused
    // (context_too_long, OpenAI's message) instead of clipped.
    bool strict_max_tokens = false;
    int min_tokens = 0;
    std::vector<std::string> stop;        // stop strings (excluded from the text)
    std::vector<int32_t> stop_token_ids;  // in addition to the model's EOS ids
    bool ignore_eos = false;
    bool include_stop_str_in_output = false;
};

struct GenerateRequest {
    std::string id;     // for logs; generated when empty
    std::string model;  // adapter name, alias, "base:adapter", or the base model id / "" for the base
    // Exactly one prompt form:
    std::vector<int32_t> prompt_ids;
    std::optional<std::string> prompt;  // tokenized with special tokens recognised, BOS per tokenizer
    // Chat inputs keep the client's key order (ordered_json): templates observe it (tojson of tools).
    std::optional<nlohmann::ordered_json> messages;  // OpenAI messages; rendered with the chat template
    nlohmann::ordered_json tools;                    // null or array, passed to the template
    nlohmann::ordered_json chat_template_kwargs;     // null or object (enable_thinking, ...)
    bool add_generation_prompt = true;
    SamplingParams sampling;
    StopParams stop;
    int logprobs = -1;  // -1 = off; else number of top alternatives (0..20)
    // Prompt scoring (lm-eval loglikelihood, vLLM prompt_logprobs): -1 = off; else every prompt token after
    // the first gets its logprob under this request's adapter, its rank and this many alternatives (0..20),
    // computed in the prefill. The prompt's rows are then computed, not taken from the prefix cache.
    int prompt_logprobs = -1;
    bool skip_special_tokens = true;
    // Structured output: a GBNF grammar (llama.cpp's dialect, root rule "root") that the generated text must
    // follow; every token keeps it a prefix of a sentence of the grammar and EOS comes only where the grammar
    // can end. Empty = unconstrained. The server compiles response_format, guided_* and tool_choice into this.
    std::string grammar;
};

struct TopLogprob {
    int32_t token_id = 0;
    std::string token;  // the token's text (may be a partial UTF-8 sequence, bytes in `bytes`)
    float logprob = 0.0f;
};

struct TokenLogprob {
    TopLogprob chosen;
    std::vector<TopLogprob> top;
    int rank = 0;  // prompt_logprobs only: 1 + the number of tokens more likely than `chosen`; 0 = not scored
};

// New tokens and the text they complete. `text` is always valid UTF-8 and never contains any part of
// a stop string; it may be empty while bytes are held back.
// With GenerateRequest::prompt_logprobs >= 0 the first event is a TokenEvent with no token ids and no text
// whose prompt_logprobs holds one entry per prompt token, in order (token texts as in logprobs). The first
// token has nothing to predict it: its entry has rank 0, logprob 0 and no alternatives. No other event
// carries any. A request cancelled or failed before its prompt was scored gets none.
struct TokenEvent {
    std::vector<int32_t> token_ids;
    std::string text;
    std::vector<TokenLogprob> logprobs;  // one per token when requested
    std::vector<TokenLogprob> prompt_logprobs;
};

enum class FinishReason { stop, length, cancelled };

struct Usage {
    int prompt_tokens = 0;
    int cached_tokens = 0;  // prompt tokens served from the prefix cache
    int completion_tokens = 0;
};

struct FinishEvent {
    FinishReason reason = FinishReason::stop;
    std::string stop_reason;  // the stop string, or the token id as text, when reason == stop
    Usage usage;
    double ttft_ms = 0;
    double latency_ms = 0;
};

struct ErrorEvent {
    Status status;
};

using Event = std::variant<TokenEvent, FinishEvent, ErrorEvent>;

// Where an adapter's weights are: in a device slot (gpu), in host memory (cpu) or only on disk; `base` for
// a request without an adapter. Text only at the edges (JSON, metrics, UI): tier_name().
enum class Tier { base, gpu, cpu, disk };

constexpr std::string_view tier_name(Tier t) {
    switch (t) {
        case Tier::base:
            return "base";
        case Tier::gpu:
            return "gpu";
        case Tier::cpu:
            return "cpu";
        case Tier::disk:
            return "disk";
    }
    return "disk";
}

// What the engine knew when it accepted a request (before any token).
struct SubmitInfo {
    std::string request_id;
    std::string adapter;  // resolved adapter name; empty for the base model
    std::string adapter_digest;
    Tier tier = Tier::base;  // where the adapter was at submission
    int prompt_tokens = 0;
    int max_tokens = 0;         // after clipping to the context
    int prefix_hit_tokens = 0;  // prompt tokens already found in the prefix cache at submission (0 = none/unknown)
    // Chat requests: the rendered prompt's last bytes (up to 64), so the server can tell whether the template
    // opened a reasoning block (<think>) that the reply starts inside. Empty for other prompts.
    std::string prompt_tail;
};

// One request's events, in order, for a single consumer. A FinishEvent or ErrorEvent is last.
class RequestStream {
  public:
    virtual ~RequestStream() = default;
    virtual const SubmitInfo& info() const = 0;
    // Waits up to `timeout` for the next event; nullopt on timeout (the request is still running).
    virtual std::optional<Event> next(std::chrono::milliseconds timeout) = 0;
    // Cancels at once (client gone): frees KV pages and slots; a FinishEvent(cancelled) follows.
    virtual void cancel() = 0;
};

// ---- adapters, model, stats -------------------------------------------------------------------

struct AdapterInfo {
    std::string name;
    std::vector<std::string> aliases;
    std::string digest;  // sha256 of canonical config + tensors
    std::string path;
    std::string base_model;  // base_model_name_or_path from adapter_config.json
    int rank = 0;            // max rank over modules
    float alpha = 0;
    bool rslora = false;
    std::vector<std::string> targets;  // q_proj, ...
    std::size_t size_bytes = 0;
    Tier tier = Tier::disk;
    bool pinned = false;
    bool compatible = true;
    std::string incompatibility;  // why not, when !compatible
    int running = 0;
    int waiting = 0;
    uint64_t requests_total = 0;
    uint64_t prompt_tokens_total = 0;
    uint64_t cached_tokens_total = 0;
    uint64_t generated_tokens_total = 0;
    double last_load_ms = 0;
    int64_t last_used_unix = 0;
    int64_t created_unix = 0;
};

struct ModelInfo {
    std::string id;  // served model id (folder name)
    std::string path;
    std::string architecture;
    std::string device;
    uint64_t parameters = 0;
    int max_context = 0;
    int vocab_size = 0;
    std::size_t weight_bytes = 0;
    // The checkpoint's weight quantization: "fp8", "fp8-tensor", "fp8-channel", "awq", "gptq", or "" when
    // unquantized; quantization_detail says it for people ("awq int4, group 128").
    std::string quantization;
    std::string quantization_detail;
    std::size_t kv_bytes = 0;
    std::size_t lora_slot_bytes = 0;
    int kv_pages_total = 0;
    int page_size = 0;
    int max_loras = 0;
    int max_lora_rank = 0;
    // The chat template's text (empty when the model has none): the server reads its markers to choose the
    // tool-call and reasoning parsers.
    std::string chat_template;
};

struct EngineStats {
    int running = 0;
    int waiting = 0;
    int kv_pages_total = 0;
    int kv_pages_free = 0;
    int kv_pages_cached = 0;  // held by the prefix cache only
    uint64_t prompt_tokens_total = 0;
    uint64_t cached_tokens_total = 0;
    uint64_t generated_tokens_total = 0;
    uint64_t steps_total = 0;
    double tokens_per_second = 0;  // generated, over the last few seconds
    int gpu_slots_used = 0;
    int cpu_adapters = 0;
    int max_loras = 0;  // adapter slots = distinct adapters per step

    // Scheduler state and history (engine loop; see docs/scheduler.md).
    int swapped = 0;                     // waiting after a preemption (their KV is recomputed on re-admission)
    int waiting_for_adapter = 0;         // waiting only for an adapter slot (cap reached or still loading)
    uint64_t preemptions_total = 0;      // by recompute, when running sequences outgrow the KV cache
    uint64_t computed_tokens_total = 0;  // tokens run through the model (prefill + decode + recompute)
    uint64_t finished_total = 0;
    Histogram step_seconds, batch_size, prefill_tokens_per_step, decode_tokens_per_step;
    double plan_seconds_total = 0, forward_seconds_total = 0, sample_seconds_total = 0, commit_seconds_total = 0;
    uint64_t sampled_rows_total = 0, host_sampled_rows_total = 0;
    // Running / waiting sequences per adapter name (the base model is not listed), refreshed every 100 ms.
    std::vector<std::pair<std::string, int>> running_by_adapter, waiting_by_adapter;

    // Adapter movements: disk -> host reads, host -> device slot uploads.
    Histogram adapter_disk_to_host_seconds, adapter_host_to_device_seconds;
    uint64_t adapter_load_failures = 0, adapter_host_evictions = 0, adapter_device_evictions = 0;
};

// One minute of an adapter's traffic, from the catalog's history.
struct StatsPoint {
    int64_t minute_unix = 0;
    uint64_t requests = 0;
    uint64_t prompt_tokens = 0;
    uint64_t cached_tokens = 0;
    uint64_t completion_tokens = 0;
    uint64_t errors = 0;
    double ttft_p50_ms = 0;
    double ttft_p95_ms = 0;
    double latency_p50_ms = 0;
    double latency_p95_ms = 0;
};

struct AdapterVersion {
    std::string digest;
    int64_t created_unix = 0;
    bool current = false;
};

struct AdapterDetails {
    AdapterInfo info;
    nlohmann::json config;  // adapter_config.json as on disk
    std::vector<AdapterVersion> versions;
    std::vector<std::string> recent_events;  // newest first, "2026-11-22 06:40:01 load ..."
};

class Engine {
  public:
    virtual ~Engine() = default;

    virtual Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) = 0;

    virtual Status load_adapter(const std::string& name, const std::string& path) = 0;
    virtual Status unload_adapter(const std::string& name) = 0;  // running requests finish first
    virtual Status pin_adapter(const std::string& name, bool pinned) = 0;
    virtual Status set_alias(const std::string& alias, const std::string& name) = 0;
    virtual std::vector<AdapterInfo> adapters() const = 0;
    virtual Result<AdapterInfo> adapter(const std::string& name_or_alias) const = 0;

    // Catalog (persistent across restarts; empty results when the engine runs without a data dir).
    virtual Status import_adapters(const std::string& folder) = 0;  // each adapter folder under it, by name
    virtual Status remove_adapter(const std::string& name) = 0;     // from the catalog; never deletes files
    virtual Result<AdapterDetails> adapter_details(const std::string& name_or_alias) const = 0;
    virtual Result<std::vector<StatsPoint>> adapter_history(const std::string& name_or_alias, int minutes) const = 0;

    virtual ModelInfo model() const = 0;
    virtual EngineStats stats() const = 0;

    virtual Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) const = 0;
    virtual Result<std::string> detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const = 0;
    virtual Result<std::string> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                            bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const = 0;

    // Stops accepting work, cancels running requests, joins the engine thread. Idempotent.
    virtual void shutdown() = 0;
};

// Builds the engine (loads the model, registers adapters). Errors: not_found / corrupt_file /
// unsupported / unavailable (no GPU when device=cuda), with a message that says what to do.
Result<std::unique_ptr<Engine>> create_engine(const EngineOptions& options);

}  // namespace loradesk::api
