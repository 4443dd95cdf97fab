// sched::Sequence: one request's state as the scheduler sees it: token ids (prompt then generated),
// adapter namespace, plain sampling/stop settings, page table and prefix-cache lock, progress, status.
// No dependency on engine/api: the facade translates its request types into these.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/prefix_cache.h"
#include "runtime/sampler.h"

namespace loradesk::sched {

// The runtime sampler's parameters; greedy unless the request says otherwise (temperature 0).
struct SamplingConfig {
    runtime::SamplingParams params = [] {
        runtime::SamplingParams p;
        p.temperature = 0.0f;
        return p;
    }();
};

struct StopConfig {
    int max_tokens = 256;                 // completion tokens (clipped to the context at submit)
    int min_tokens = 0;                   // EOS and stop ids are ignored before this many tokens
    std::vector<int32_t> eos_token_ids;   // the model's EOS ids
    std::vector<int32_t> stop_token_ids;  // extra ids that end the request
    bool ignore_eos = false;
};

enum class SeqStatus { waiting, running, finished };

// Why a sequence ended. `stop` covers EOS, stop ids and stop strings (the text layer calls finish()).
enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);

struct Sequence {
    uint64_t id = 0;
    std::string ns;               // adapter content digest; "" = base model
    int adapter = 0;              // the scheduler's small id for ns (0 = base), so the hot path compares ints
    std::vector<int32_t> tokens;  // prompt followed by generated ids
    int n_prompt = 0;
    SamplingConfig sampling;
    StopConfig stop;

    // KV state. pages[i] holds tokens [i*page_size, (i+1)*page_size); the first n_computed tokens have KV.
    std::vector<int32_t> pages;      // one PagePool reference each
    kv::PrefixNode* lock = nullptr;  // locked prefix-cache path while admitted
    int lock_depth = 0;              // PrefixCache::depth(lock), kept here to avoid touching the node
    int n_computed = 0;
    int n_cached_prompt = -1;  // prompt tokens served by the cache at first admission; -1 = not yet admitted

    // Prompt scoring: row p of the prompt (p < n_prompt - 1) yields the logprob of token p + 1 and this many
    // alternatives; -1 = off. n_scored rows are done; it survives preemption, so a recompute neither repeats
    // nor skips a row, and the prefix cache may serve only those rows' tokens.
    int prompt_logprobs = -1;
    int n_scored = 0;

    SeqStatus status = SeqStatus::waiting;
    uint64_t arrival = 0;       // submit order; preempted sequences keep theirs
    int64_t enqueued_step = 0;  // step at which it (re-)entered the waiting queue
    int n_preemptions = 0;
    int slot = 0;  // LoRA slot granted for the current step

    FinishReason finish_reason = FinishReason::stop;
    std::string finish_detail;                    // stop string / token id as text / error message
    ErrorCode finish_code = ErrorCode::internal;  // what kind of error, when finish_reason is error

    std::chrono::steady_clock::time_point t_submit{};
    std::chrono::steady_clock::time_point t_first_token{};

    std::span<const int32_t> prompt() const { return {tokens.data(), std::size_t(n_prompt)}; }
    std::span<const int32_t> generated() const {
        return std::span<const int32_t>(tokens).subspan(std::size_t(n_prompt));
    }
    int n_generated() const { return int(tokens.size()) - n_prompt; }
    int n_pending() const { return int(tokens.size()) - n_computed; }  // tokens without KV yet
    bool scoring() const { return prompt_logprobs >= 0 && n_scored < n_prompt - 1; }
    bool is_decode() const { return status == SeqStatus::running && n_pending() == 1 && n_generated() > 0; }
};

}  // namespace loradesk::sched
