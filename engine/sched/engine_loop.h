// EngineLoop: the one thread that owns the runner, the KV page pool, the prefix cache and the scheduler.
// Other threads submit and cancel through a locked inbox and read each request's events (token ids,
// optional logprobs, then one finish with usage and timings) from its RequestChannel. Each request has
// its own runtime::Sampler (penalties, seed). Stop strings live in the text layer, which calls cancel()
// with FinishReason::stop and the string.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/histogram.h"
#include "core/thread_pool.h"
#include "lora/adapter_residency.h"
#include "runtime/model_runner.h"
#include "sched/scheduler.h"

namespace loradesk::sched {

struct TokenOut {
    int32_t token_id = 0;
    float logprob = 0.0f;                        // filled when sampling.params.top_logprobs >= 0
    std::vector<std::pair<int32_t, float>> top;  // best alternatives, most likely first
    int32_t rank = 0;  // prompt scoring: 1 + the number of tokens more likely than token_id; 0 otherwise
};

// Scores of prompt tokens [first_position + 1, first_position + 1 + rows.size()), one TokenOut each (the
// prompt token, its logprob under the request's adapter, its rank and the top alternatives). A request that
// scores its prompt gets these before any TokenOut, each prompt token exactly once, preemptions included.
struct PromptLogprobsOut {
    int first_position = 0;
    std::vector<TokenOut> rows;
};

struct FinishOut {
    FinishReason reason = FinishReason::stop;
    std::string detail;                          // token id / stop string / error message
    ErrorCode error_code = ErrorCode::internal;  // when reason is error: what kind (maps to the HTTP status)
    int prompt_tokens = 0;
    int cached_tokens = 0;
    int completion_tokens = 0;
    int preemptions = 0;
    double ttft_ms = 0;
    double latency_ms = 0;
};

using LoopEvent = std::variant<TokenOut, FinishOut, PromptLogprobsOut>;

// One request's events in order; FinishOut is last. Thread-safe.
class RequestChannel {
  public:
    explicit RequestChannel(uint64_t id) : m_id(id) {}
    uint64_t id() const { return m_id; }
    // Waits up to `timeout`; nullopt on timeout.
    std::optional<LoopEvent> next(std::chrono::milliseconds timeout);
    void push(LoopEvent e);

  private:
    uint64_t m_id;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<LoopEvent> m_events;
};

struct EngineLoopConfig {
    SchedulerConfig sched;
    std::size_t kv_bytes = std::size_t(512) << 20;  // page pool budget
    int page_size = kv::kDefaultPageSize;
    int max_lora_rank = 64;
};

// What the loop's steps looked like since start: where a step's time goes (planning, the model, sampling,
// committing), how large batches were, how many prompt (prefill) and decode tokens each step ran, and how
// many logits rows had to come back whole for host sampling. Read with stats(); engine loop writes.
struct LoopMetrics {
    Histogram step_seconds{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025,
                           0.03,  0.04,   0.05,  0.075,  0.1,  0.25,  0.5,  1};
    Histogram batch_size{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 160, 192, 256, 384, 512};
    Histogram prefill_tokens{0, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    Histogram decode_tokens{0, 1, 4, 8, 16, 32, 64, 96, 128, 192, 256, 512};
    double plan_seconds = 0, forward_seconds = 0, sample_seconds = 0, commit_seconds = 0;
    int64_t sampled_rows = 0;       // logits rows sampled
    int64_t host_sampled_rows = 0;  // of those, rows copied whole to the host (non-greedy, processors, logprobs)
};

struct LoopStats {
    int running = 0;
    int waiting = 0;
    int swapped = 0;              // waiting after a preemption
    int waiting_for_adapter = 0;  // waiting only for an adapter slot (cap reached or loading)
    int pages_total = 0;
    int pages_free = 0;
    int pages_cached = 0;
    SchedulerCounters counters;
    LoopMetrics metrics;
    // Running and waiting sequences per adapter digest ("" = base), refreshed at most every 100 ms.
    std::vector<std::pair<std::string, int>> running_by_adapter, waiting_by_adapter;
};

class EngineLoop {
  public:
    // Sizes the pool from the runner's kv_page_bytes, configures its LoRA slots, starts the thread.
    EngineLoop(runtime::ModelRunner& runner, lora::AdapterResidency& residency, EngineLoopConfig cfg);
    ~EngineLoop();  // cancels what is left and joins
    EngineLoop(const EngineLoop&) = delete;
    EngineLoop& operator=(const EngineLoop&) = delete;

    // Validates now (Scheduler::check_submit, then what only the loop knows: token ids against the
    // vocabulary, sampling settings, LoRA slots, queue capacity; throws ExpectedError) and queues the
    // request. Any thread.
    std::shared_ptr<RequestChannel> submit(SubmitSpec request);
    // Ends a request at once (client gone: cancelled; stop string found: stop + the string). Any thread.
    void cancel(uint64_t id, FinishReason reason = FinishReason::cancelled, std::string detail = {});
    // Adapter unloaded or changed: drops its prefix-cache namespace at once (locked pages follow when
    // their requests end). Any thread.
    void evict_adapter(std::string digest);
    // Cancels every open request (readers see cancelled), stops and joins the thread; later submits
    // fail with unavailable. Idempotent; the destructor calls it.
    void stop();
    LoopStats stats() const;
    int n_pages() const { return m_n_pages; }

  private:
    struct Cancel {
        uint64_t id;
        FinishReason reason;
        std::string detail;
    };
    void run();
    void drain_inbox();
    void step();
    // Starts computing the grammar masks of this step's constrained rows on the pool; invalid when none.
    std::future<void> start_masks();
    void gather_device_masks();
    void sample_rows(std::vector<int32_t>& sampled, std::vector<TokenOut>& outs);
    void score_rows();
    void emit_tokens();
    void emit_finished();
    void publish_stats();

    runtime::ModelRunner& m_runner;
    lora::AdapterResidency& m_residency;
    EngineLoopConfig m_cfg;
    int m_n_pages = 0;
    int m_n_slots = 0;
    std::unique_ptr<kv::PagePool> m_pool;
    std::unique_ptr<kv::PrefixCache> m_cache;
    std::unique_ptr<Scheduler> m_sched;

    mutable std::mutex m_mutex;  // guards the inbox, m_stop and m_stats
    std::condition_variable m_cv;
    std::vector<std::pair<SubmitSpec, std::shared_ptr<RequestChannel>>> m_submits;
    std::vector<Cancel> m_cancels;
    std::vector<std::string> m_evictions;
    bool m_stop = false;
    LoopStats m_stats;
    std::atomic<uint64_t> m_next_id{1};
    std::atomic<int> m_queued{0};  // submitted, not yet finished

    std::unordered_map<uint64_t, std::shared_ptr<RequestChannel>> m_channels;    // loop thread only
    std::unordered_map<uint64_t, std::unique_ptr<runtime::Sampler>> m_samplers;  // loop thread only
    StepPlan m_plan;
    std::vector<std::pair<uint64_t, LoopEvent>> m_pending;  // this step's scores and tokens, sent after stats
    std::vector<float> m_logits;                            // rows the host samplers and prompt scoring need, packed
    std::vector<int32_t> m_packed;                          // logits row -> its index in m_logits (-1: not copied)
    std::vector<int32_t> m_argmax;                          // every row's greedy token, from the runner
    std::vector<uint8_t> m_want_logits;
    LoopMetrics m_metrics;  // loop thread; copied into m_stats under m_mutex
    std::chrono::steady_clock::time_point m_by_adapter_at{};
    std::unique_ptr<ThreadPool> m_sample_pool;                   // host sampling of many rows; made on first need
    std::vector<std::pair<runtime::Sampler*, int>> m_mask_rows;  // constrained rows of the step, tokens left
    std::vector<int32_t> m_mask_of_row;  // logits row -> its mask in m_mask_words, -1: none (runner argmax)
    std::vector<uint32_t> m_mask_words;  // masks of the greedy constrained rows, packed
    std::thread m_thread;
};

// Greedy choice over one logits row; fills logprob and `n_top` alternatives when n_top >= 0. A cheap
// stand-in for runtime::Sampler where tests and benches drive a Scheduler directly.
TokenOut greedy_sample(std::span<const float> row, int n_top);

// The prompt-scoring entry for one logits row: `token`'s logprob (log-softmax in double), its rank, and the
// n_top most likely tokens (ties: lower id first).
TokenOut score_token(std::span<const float> row, int32_t token, int n_top);

}  // namespace loradesk::sched
