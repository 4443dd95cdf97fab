// The scheduler's two pure steps (TensorRT-LLM capacity scheduler -> micro-batch scheduler):
// plan_capacity decides which sequences fit this step (KV pages, adapter slots, running cap, policy,
// age bound, preemption); plan_tokens splits the token budget (decode first, then prefill chunks).
// Both are deterministic functions of plain inputs, so tests step them against expected tables.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loradesk::sched {

enum class Policy {
    fcfs,  // arrival order
    pack,  // waiting requests of adapters already in the step first, then whole adapter groups
};
const char* policy_name(Policy p);
Policy parse_policy(std::string_view name);  // throws ExpectedError(invalid_argument)

struct CapacityConfig {
    int max_loras = 4;            // distinct non-base adapters per step (= device slots)
    int max_running = 256;        // sequences admitted at once
    int max_batch_tokens = 2048;  // used to stop admitting once the step's token budget is spoken for
    Policy policy = Policy::fcfs;
    int64_t max_wait_steps = 64;  // a request waiting longer than this is served before anyone new
    // Admission headroom: a newcomer is admitted only if, besides every admitted sequence's next chunk,
    // the pages for the next `reserve_tokens` tokens of growth of each sequence (capped by what its
    // max_tokens can still add) stay available. 0 admits on the next chunk alone, which fills the pool and
    // then preempts by recompute as sequences grow; a large value never preempts when max_tokens is exact.
    int reserve_tokens = 0;
};

struct CapacityCandidate {
    int id = 0;            // caller's index
    std::string_view ns;   // adapter digest, "" = base (needs no slot)
    int adapter = 0;       // id of ns, unique per digest; 0 = base
    int pages_needed = 0;  // new pages for its next chunk
    int tokens = 0;        // tokens of its next chunk (1 for a decode)
    uint64_t arrival = 0;
    int64_t waited_steps = 0;  // waiting candidates only
    int reclaimable = 0;       // running only: pages that become available if it is preempted
    int reserve_pages = 0;     // pages its next CapacityConfig::reserve_tokens of growth would add
};

struct CapacityPlan {
    std::vector<int> running;           // running candidates that go on this step, oldest first
    std::vector<int> admitted;          // waiting candidates admitted, in admission order
    std::vector<int> preempted;         // running candidates to preempt (newest first)
    std::vector<int> deferred;          // running or waiting candidates that wait for a later step
    std::vector<std::string> adapters;  // distinct non-base adapters of running + admitted
    int deferred_for_adapter = 0;       // waiting candidates that fit but for the adapter cap
};

// `running` and `waiting` may be in any order; `available_pages` = free + evictable pages.
CapacityPlan plan_capacity(const CapacityConfig& cfg, std::span<const CapacityCandidate> running,
                           std::span<const CapacityCandidate> waiting, int available_pages);

struct TokenCandidate {
    int pending = 0;      // tokens without KV
    bool decode = false;  // one token after sampling
};

// Tokens each candidate runs this step (0 = none), decode first, then prefill chunks in the given order.
std::vector<int> plan_tokens(int max_batch_tokens, std::span<const TokenCandidate> candidates);

}  // namespace loradesk::sched
