// Scheduler: owns the sequences and drives one step at a time around the pure steps of
// scheduler_steps.h: capacity -> adapter residency -> preemption / admission (prefix-cache match in the
// adapter's namespace) -> token budget -> page allocation -> ForwardBatch; then commit() applies the
// sampled tokens, caches filled pages and checks stop conditions. It does not run the model or sample.
// Not thread-safe: the engine loop thread (or a test) is its only caller.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/page_pool.h"
#include "kv/prefix_cache.h"
#include "lora/adapter_residency.h"
#include "runtime/forward_batch.h"
#include "sched/scheduler_steps.h"
#include "sched/sequence.h"

namespace loradesk::grammar {
class GrammarMatcher;
}

namespace loradesk::sched {

struct SchedulerConfig {
    CapacityConfig capacity;
    int max_waiting = 4096;  // submit() answers ExpectedError(capacity) beyond this
    int max_context = 4096;  // prompt + completion tokens
    // Logits rows one step may produce (sampling rows plus prompt-scoring rows), bounding the host copy of
    // scored rows (rows x vocab x 4 bytes). Scoring rows beyond it wait for the next step (smaller chunks);
    // the CUDA runner's logits workspace is planned for CudaRunnerOptions::max_logits = 256 rows.
    int max_logits_rows = 256;
};

struct SubmitSpec {
    std::string ns;  // adapter digest, "" = base
    std::vector<int32_t> prompt;
    SamplingConfig sampling;
    StopConfig stop;
    int prompt_logprobs = -1;  // score the prompt with this many alternatives per token; -1 = off
    // Structured output: the grammar state every generated token must keep valid (the loop's sampler owns it).
    std::shared_ptr<grammar::GrammarMatcher> constraint;
};

// A logits row that scores a prompt token: row `row` of the step's logits (at prompt position `position`)
// gives the logprob of the prompt token at position + 1.
struct ScoreRow {
    Sequence* seq = nullptr;
    int position = 0;
    int32_t row = 0;
};

// One planned step: the batch and, in batch order, the sequences in it and how many tokens each runs.
struct StepPlan {
    runtime::ForwardBatch batch;
    std::vector<Sequence*> seqs;
    std::vector<int> n_tokens;
    std::vector<Sequence*> sampling;     // sequences that sample a token this step, in logits_indices order
    std::vector<int32_t> sampling_rows;  // logits row of sampling[i] (== i when nothing is scored)
    std::vector<ScoreRow> scoring;       // prompt-scoring rows, in logits_indices order
};

struct SchedulerCounters {
    int64_t steps = 0;
    int64_t prompt_tokens = 0;    // prompt tokens of admitted requests
    int64_t cached_tokens = 0;    // of those, served from the prefix cache
    int64_t computed_tokens = 0;  // tokens run through the model (prefill + decode + recompute)
    int64_t generated_tokens = 0;
    int64_t preemptions = 0;
    int64_t finished = 0;
};

class Scheduler {
  public:
    Scheduler(SchedulerConfig cfg, kv::PagePool& pool, kv::PrefixCache& cache, lora::AdapterResidency& residency);
    ~Scheduler();

    // The request-level admission rules, owned here and nowhere else: a prompt, max_tokens >= 1 (or 0 when
    // the prompt is only scored), the
    // prompt within the context (ExpectedError(context_too_long)) and within the KV cache (capacity).
    // Reads only what is fixed at construction, so the engine loop's submit calls it on the caller's
    // thread to fail early.
    void check_submit(const SubmitSpec& spec) const;
    // Queues a request (and prefetches its adapter): check_submit, then ExpectedError(capacity) when the
    // queue is full. Clips max_tokens to the context.
    uint64_t submit(SubmitSpec spec, uint64_t id = 0);
    // Ends a request now from any state (cancel, stop string, error): its computed pages go to the prefix
    // cache in its namespace, everything else back to the pool. Unknown or finished ids are ignored.
    void finish(uint64_t id, FinishReason reason, std::string detail = {}, ErrorCode code = ErrorCode::internal);

    // Plans the next step; false when there is nothing to run (the plan is then empty).
    bool plan(StepPlan& out);
    // Applies a step: `sampled[i]` is the token for out.sampling[i].
    void commit(const StepPlan& plan, std::span<const int32_t> sampled);

    // Sequences that ended since the last call (finished, cancelled, failed); ownership passes to the caller.
    std::vector<std::unique_ptr<Sequence>> take_finished();

    const Sequence* find(uint64_t id) const;
    int n_running() const { return int(m_running.size()); }
    int n_waiting() const { return int(m_waiting.size()); }
    // Waiting sequences that were preempted (their KV was given back and is recomputed on re-admission).
    int n_swapped() const;
    // (adapter digest, sequences) for the running or the waiting ones; "" = base model.
    std::vector<std::pair<std::string, int>> count_by_adapter(SeqStatus status) const;
    // Waiting requests the last plan() could have admitted but for their adapter: the adapter cap was
    // reached or its slot was still loading.
    int n_waiting_for_adapter() const { return m_waiting_for_adapter; }
    const SchedulerCounters& counters() const { return m_counters; }
    const SchedulerConfig& config() const { return m_cfg; }
    kv::PagePool& pool() { return m_pool; }
    kv::PrefixCache& cache() { return m_cache; }

  private:
    void preempt(Sequence& s);
    void release_kv(Sequence& s);
    void end(Sequence* s, FinishReason reason, std::string detail, ErrorCode code = ErrorCode::internal);
    bool admit(Sequence& s);
    bool grow(Sequence& s, int n_tokens);
    // Tokens of s the prefix cache may serve: all but the last; while s scores its prompt, only the rows
    // already scored (a cached token yields no logits row).
    std::span<const int32_t> cache_key(const Sequence& s) const;
    // Shortens scoring sequences' chunks so that the step's logits rows stay within max_logits_rows.
    void cap_scoring_rows(const std::vector<Sequence*>& go, std::vector<int>& n) const;
    void cache_full_pages(Sequence& s);
    bool check_stop(Sequence& s);
    // Pages the next reserve_tokens of growth add to a sequence whose KV will hold kv_after_step tokens.
    int reserve_pages(const Sequence& s, int kv_after_step) const;
    // Fills the capacity step's inputs; returns the pages available (free + evictable).
    int gather_candidates(std::vector<CapacityCandidate>& running, std::vector<CapacityCandidate>& waiting);
    // Grants slots for the step's adapters; drops not-ready adapters' sequences from the step and ends
    // those of failed adapters with the residency's error.
    void apply_residency(const std::vector<std::string>& adapters, std::vector<Sequence*>& go,
                         std::vector<Sequence*>& admit_list);
    void build_batch(StepPlan& out, std::vector<Sequence*>& seqs, const std::vector<int>& n_tokens);
    void remove_from(std::vector<Sequence*>& list, Sequence* s);

    SchedulerConfig m_cfg;
    kv::PagePool& m_pool;
    kv::PrefixCache& m_cache;
    lora::AdapterResidency& m_residency;
    std::unordered_map<uint64_t, std::unique_ptr<Sequence>> m_seqs;
    std::vector<Sequence*> m_running;  // admitted, in admission order
    std::vector<Sequence*> m_waiting;  // in queue order
    std::vector<std::unique_ptr<Sequence>> m_finished;
    std::unordered_map<std::string, int> m_adapter_ids;  // digest -> small id (1..); never reused
    std::vector<int> m_slot_of;                          // adapter id -> slot granted this step
    uint64_t m_next_id = 1;
    uint64_t m_next_arrival = 0;
    int64_t m_step = 0;
    int m_waiting_for_adapter = 0;
    SchedulerCounters m_counters;
};

// The OpenAI "context_length_exceeded" message; prompt_word names the prompt ("messages" or "prompt").
std::string context_too_long_message(int max_context, int prompt_tokens, int completion_tokens,
                                     const char* prompt_word = "messages");

}  // namespace loradesk::sched
