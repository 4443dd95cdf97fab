// Memory planning: how many KV pages and adapter slots a device holds once the weights and workspace are
// in place (vLLM's gpu_memory_utilization). A pure function of the numbers it is given, so the refusals
// and the arithmetic are tested without a GPU; the engine factory feeds it what the runner reports.
#pragma once

#include <cstddef>
#include <string>

namespace loradesk::runtime {

struct MemoryPlanInput {
    std::size_t device_total = 0;   // bytes
    std::size_t device_free = 0;    // bytes free now: weights and workspace are already allocated
    double utilization = 0.9;       // fraction of the device the engine may hold in all
    std::size_t reserve_bytes = 0;  // allocated later outside the plan (graphs, cuBLAS, page-table metadata)
    std::size_t kv_page_bytes = 0;  // one page, all layers, K and V
    int page_size = 16;
    std::size_t slot_bytes = 0;  // one adapter slot at max rank
    int max_context = 0;         // tokens one sequence may reach
    // Overrides: <= 0 means plan it.
    double kv_memory_gb = 0;
    int max_loras = 0;
    int default_max_loras = 8;  // slots when none are asked for (fewer if they would crowd out the KV cache)
};

struct MemoryPlan {
    int max_loras = 0;
    std::size_t kv_bytes = 0;
    int kv_pages = 0;
    std::size_t kv_tokens = 0;
    std::size_t budget_bytes = 0;  // what the engine may still allocate: total * utilization - in use - reserve
    std::string summary;           // one line for the log
};

// Throws ExpectedError(capacity) naming the number to change when the plan is impossible: weights alone
// exceed the utilization, the asked KV or slots do not fit, or the KV cache cannot hold one page.
MemoryPlan plan_device_memory(const MemoryPlanInput& in);

}  // namespace loradesk::runtime
