// plan_device_memory; see memory_plan.h.
#include "runtime/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace loradesk::runtime {
namespace {

double gib(std::size_t b) { return double(b) / double(std::size_t(1) << 30); }

}  // namespace

MemoryPlan plan_device_memory(const MemoryPlanInput& in) {
    if (!(in.utilization > 0 && in.utilization <= 1))
        throw_expected(ErrorCode::invalid_argument,
                       fmt::format("--gpu-memory-utilization must be in (0, 1], got {}", in.utilization));
    if (in.kv_page_bytes == 0 || in.page_size <= 0)
        throw_expected(ErrorCode::internal, "memory plan: the KV page size is zero");
    const double allowed = double(in.device_total) * in.utilization;
    const double in_use = double(in.device_total - std::min(in.device_free, in.device_total));
    const double budget = allowed - in_use - double(in.reserve_bytes);
    if (budget <= double(in.kv_page_bytes))
        throw_expected(
            ErrorCode::capacity,
            fmt::format("the model's weights and workspace take {:.2f} GiB of the {:.2f} GiB GPU "
                        "({:.2f} GiB allowed by --gpu-memory-utilization {}), leaving no room for the KV "
                        "cache: raise --gpu-memory-utilization, free the GPU from other processes, or "
                        "use a smaller model",
                        in_use / double(1 << 30), gib(in.device_total), allowed / double(1 << 30), in.utilization));
    MemoryPlan p;
    p.budget_bytes = std::size_t(budget);

    // Slots: as asked, else the default unless that would take more than a quarter of the budget.
    if (in.max_loras > 0) {
        p.max_loras = in.max_loras;
    } else {
        const double quarter = budget / 4;
        const int fit = in.slot_bytes ? int(std::min(quarter / double(in.slot_bytes), 1e6)) : in.default_max_loras;
        p.max_loras = std::max(1, std::min(in.default_max_loras, fit));
    }
    const double slots = double(in.slot_bytes) * p.max_loras;
    if (slots >= budget)
        throw_expected(ErrorCode::capacity,
                       fmt::format("{} adapter slots at this --max-lora-rank take {:.2f} GiB but only {:.2f} GiB is "
                                   "left after the weights: lower --max-loras or --max-lora-rank, or raise "
                                   "--gpu-memory-utilization",
                                   p.max_loras, slots / double(1 << 30), budget / double(1 << 30)));

    const double kv_room = budget - slots;
    if (in.kv_memory_gb > 0) {
        const double asked = in.kv_memory_gb * double(std::size_t(1) << 30);
        if (asked > kv_room)
            throw_expected(ErrorCode::capacity,
                           fmt::format("--kv-memory {} GB does not fit: {:.2f} GiB is left after the weights and {} "
                                       "adapter slots; lower --kv-memory or --max-loras, or raise "
                                       "--gpu-memory-utilization",
                                       in.kv_memory_gb, kv_room / double(1 << 30), p.max_loras));
        p.kv_bytes = std::size_t(asked);
    } else {
        p.kv_bytes = std::size_t(kv_room);
    }
    p.kv_pages = int(std::min<std::size_t>(p.kv_bytes / in.kv_page_bytes, std::size_t(1) << 30));
    if (p.kv_pages < 1) throw_expected(ErrorCode::capacity, "the KV cache cannot hold one page: raise --kv-memory");
    p.kv_bytes = std::size_t(p.kv_pages) * in.kv_page_bytes;
    p.kv_tokens = std::size_t(p.kv_pages) * std::size_t(in.page_size);
    p.summary = fmt::format(
        "memory plan: {:.2f} GiB GPU x {} = {:.2f} GiB; in use {:.2f} GiB (weights, workspace); "
        "reserve {:.2f} GiB; {} adapter slots {:.2f} GiB; KV cache {:.2f} GiB = {} tokens ({} "
        "pages){}",
        gib(in.device_total), in.utilization, allowed / double(1 << 30), in_use / double(1 << 30),
        gib(in.reserve_bytes), p.max_loras, slots / double(1 << 30), gib(p.kv_bytes), p.kv_tokens, p.kv_pages,
        in.max_context > 0 && p.kv_tokens < std::size_t(in.max_context)
            ? fmt::format(" — less than one {}-token context", in.max_context)
            : std::string());
    return p;
}

}  // namespace loradesk::runtime
