// Pure capacity and token-budget steps of the scheduler. No state, no side effects.
#include "sched/scheduler_steps.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace loradesk::sched {

const char* policy_name(Policy p) { return p == Policy::pack ? "pack" : "fcfs"; }

Policy parse_policy(std::string_view name) {
    if (name == "fcfs") return Policy::fcfs;
    if (name == "pack") return Policy::pack;
    throw_expected(ErrorCode::invalid_argument,
                   "unknown scheduling policy '" + std::string(name) + "' (use fcfs or pack)");
}

namespace {

// Adapters of the step, by id (ints on the hot path; names kept for the residency call).
struct AdapterSet {
    int max_loras;
    std::vector<int> ids;
    std::vector<std::string_view> names;
    bool has(const CapacityCandidate& c) const {
        return c.adapter == 0 || std::find(ids.begin(), ids.end(), c.adapter) != ids.end();
    }
    bool fits(const CapacityCandidate& c) const { return has(c) || int(ids.size()) < max_loras; }
    void add(const CapacityCandidate& c) {
        if (has(c)) return;
        ids.push_back(c.adapter);
        names.push_back(c.ns);
    }
    void clear() {
        ids.clear();
        names.clear();
    }
};

// Waiting order: requests past the age bound first (oldest first); then the policy's order.
std::vector<const CapacityCandidate*> waiting_order(const CapacityConfig& cfg,
                                                    std::span<const CapacityCandidate> waiting,
                                                    const AdapterSet& in_step) {
    std::vector<const CapacityCandidate*> aged, rest;
    for (auto& w : waiting) (w.waited_steps >= cfg.max_wait_steps ? aged : rest).push_back(&w);
    auto by_arrival = [](const CapacityCandidate* a, const CapacityCandidate* b) { return a->arrival < b->arrival; };
    std::sort(aged.begin(), aged.end(), by_arrival);
    std::sort(rest.begin(), rest.end(), by_arrival);
    if (cfg.policy == Policy::pack) {
        // Group by adapter: groups already in the step first, then by each group's oldest request.
        std::map<int, uint64_t> oldest;
        for (auto* w : rest) oldest.try_emplace(w->adapter, w->arrival);
        std::stable_sort(rest.begin(), rest.end(), [&](const CapacityCandidate* a, const CapacityCandidate* b) {
            bool ia = in_step.has(*a), ib = in_step.has(*b);
            if (ia != ib) return ia;
            return oldest[a->adapter] < oldest[b->adapter];
        });
    }
    aged.insert(aged.end(), rest.begin(), rest.end());
    return aged;
}

}  // namespace

CapacityPlan plan_capacity(const CapacityConfig& cfg, std::span<const CapacityCandidate> running,
                           std::span<const CapacityCandidate> waiting, int available_pages) {
    CapacityPlan plan;
    AdapterSet adapters{cfg.max_loras, {}};

    // Running sequences go first, oldest first; those whose adapter finds no slot wait a step.
    std::vector<const CapacityCandidate*> run;
    for (auto& r : running) run.push_back(&r);
    std::sort(run.begin(), run.end(), [](auto* a, auto* b) { return a->arrival < b->arrival; });
    int need = 0, tokens = 0, reserve = 0;
    std::vector<const CapacityCandidate*> going;
    for (auto* r : run) {
        if (!adapters.fits(*r)) {
            plan.deferred.push_back(r->id);
            continue;
        }
        adapters.add(*r);
        going.push_back(r);
        need += r->pages_needed;
    }
    // Out of pages: preempt the newest until the rest fit (recompute later, pages back via the cache).
    while (need > available_pages && going.size() > 1) {
        const CapacityCandidate* victim = going.back();
        going.pop_back();
        need -= victim->pages_needed;
        available_pages += victim->reclaimable;
        plan.preempted.push_back(victim->id);
    }
    adapters.clear();
    for (auto* r : going) {
        adapters.add(*r);
        plan.running.push_back(r->id);
        tokens += r->tokens;
        reserve += r->reserve_pages;
    }
    if (!plan.preempted.empty()) {
        for (auto& w : waiting) plan.deferred.push_back(w.id);
        plan.adapters.assign(adapters.names.begin(), adapters.names.end());
        return plan;
    }

    // Admission. An aged request that cannot be served stops all later admissions, so the slots and
    // pages that running requests give back go to it rather than to newcomers (no starvation).
    int n_running = int(going.size());
    bool blocked = false;
    for (const CapacityCandidate* w : waiting_order(cfg, waiting, adapters)) {
        bool aged = w->waited_steps >= cfg.max_wait_steps;
        const bool room = !blocked && n_running < cfg.max_running && tokens < cfg.max_batch_tokens &&
                          need + w->pages_needed <= available_pages &&
                          // Nothing running: the reserve cannot be what keeps the first request out.
                          (n_running == 0 || need + reserve + w->pages_needed + w->reserve_pages <= available_pages);
        if (!room || !adapters.fits(*w)) {
            plan.deferred.push_back(w->id);
            plan.deferred_for_adapter += room;
            if (aged) blocked = true;
            continue;
        }
        adapters.add(*w);
        plan.admitted.push_back(w->id);
        need += w->pages_needed;
        reserve += w->reserve_pages;
        tokens += w->tokens;
        ++n_running;
    }
    plan.adapters.assign(adapters.names.begin(), adapters.names.end());
    return plan;
}

std::vector<int> plan_tokens(int max_batch_tokens, std::span<const TokenCandidate> candidates) {
    std::vector<int> n(candidates.size(), 0);
    int budget = max_batch_tokens;
    for (std::size_t i = 0; i < candidates.size() && budget > 0; ++i)
        if (candidates[i].decode && candidates[i].pending > 0) {
            n[i] = 1;
            --budget;
        }
    for (std::size_t i = 0; i < candidates.size() && budget > 0; ++i)
        if (!candidates[i].decode && candidates[i].pending > 0) {
            n[i] = std::min(candidates[i].pending, budget);
            budget -= n[i];
        }
    return n;
}

}  // namespace loradesk::sched
