// Test harness for scheduler simulations: a scripted AdapterResidency and a Sim that owns a pool, a
// prefix cache, a Scheduler and a NullRunner and runs whole steps (plan -> forward -> greedy -> commit).
#pragma once

#include <map>
#include <set>

#include "kv/page_pool.h"
#include "kv/prefix_cache.h"
#include "sched/engine_loop.h"
#include "sched/null_runner.h"
#include "sched/scheduler.h"

namespace loradesk::sched::test {

// Adapters are ready unless scripted otherwise; "loading" ones turn ready after a number of calls.
class ScriptedResidency final : public lora::AdapterResidency {
  public:
    explicit ScriptedResidency(int n_slots) : m_n_slots(n_slots) {}
    int n_slots() const override { return m_n_slots; }
    void prefetch(const std::string& d) override { prefetched.insert(d); }
    std::vector<lora::SlotGrant> acquire_slots(const std::vector<std::string>& digests) override {
        if (int(digests.size()) > m_n_slots) too_many = true;
        std::vector<lora::SlotGrant> out;
        std::map<std::string, int> next_slots;
        int next = 1;
        for (auto& d : digests) {
            lora::SlotGrant g;
            if (failing.count(d)) {
                g.state = lora::Residency::failed;
                g.error = "adapter " + d + " is corrupt";
            } else if (loading_calls[d] > 0) {
                --loading_calls[d];
                g.state = lora::Residency::loading;
            } else {
                g.state = lora::Residency::ready;
                g.slot = next++;
                granted[g.slot] = d;
            }
            out.push_back(g);
        }
        ++calls;
        return out;
    }
    std::set<std::string> prefetched, failing;
    std::map<std::string, int> loading_calls;
    std::map<int, std::string> granted;  // slot -> digest of the last call
    bool too_many = false;
    int calls = 0;

  private:
    int m_n_slots;
};

inline model::ModelConfig null_model(int vocab = 97, int ctx = 4096) {
    model::ModelConfig c;
    c.vocab_size = vocab;
    c.max_position_embeddings = ctx;
    return c;
}

struct Sim {
    Sim(int n_pages, int page_size, SchedulerConfig cfg, int n_slots = 4)
        : pool(n_pages, page_size),
          cache(pool),
          residency(n_slots),
          runner(null_model()),
          sched(cfg, pool, cache, residency) {
        runner.allocate_kv(n_pages, page_size);
        runner.configure_lora_slots(n_slots, 8);
    }
    // One step; returns false when there was nothing to run. Ended sequences land in `done`.
    bool step() {
        bool ran = sched.plan(plan);
        if (ran) {
            std::vector<float> logits;
            runner.forward(plan.batch, logits);
            std::vector<int32_t> sampled;
            const std::size_t v = std::size_t(runner.config().vocab_size);
            for (std::size_t i = 0; i < plan.sampling.size(); ++i)
                sampled.push_back(greedy_sample(std::span<const float>(logits.data() + i * v, v), -1).token_id);
            sched.commit(plan, sampled);
        }
        for (auto& s : sched.take_finished()) done[s->id] = std::move(s);
        return ran;
    }
    int run_to_end(int max_steps = 10000) {
        int n = 0;
        while ((sched.n_running() || sched.n_waiting()) && n < max_steps) {
            step();
            ++n;
        }
        return n;
    }
    // Tokens a request for `prompt` generates when it is alone (the null runner's hash chain).
    std::vector<int32_t> alone(std::vector<int32_t> prompt, int max_tokens) const {
        std::vector<int32_t> out;
        for (int i = 0; i < max_tokens; ++i) {
            int32_t t = runner.expected_next(prompt);
            out.push_back(t);
            prompt.push_back(t);
        }
        return out;
    }
    int tokens_of(uint64_t id) const {
        for (std::size_t i = 0; i < plan.seqs.size(); ++i)
            if (plan.seqs[i]->id == id) return plan.n_tokens[i];
        return 0;
    }

    kv::PagePool pool;
    kv::PrefixCache cache;
    ScriptedResidency residency;
    NullRunner runner;
    Scheduler sched;
    StepPlan plan;
    std::map<uint64_t, std::unique_ptr<Sequence>> done;
};

inline SubmitSpec spec(std::string ns, std::vector<int32_t> prompt, int max_tokens) {
    SubmitSpec s;
    s.ns = std::move(ns);
    s.prompt = std::move(prompt);
    s.stop.max_tokens = max_tokens;
    return s;
}

inline std::vector<int32_t> ramp(int n, int32_t base = 0, int vocab = 97) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back((base + i * 7) % vocab);
    return v;
}

}  // namespace loradesk::sched::test
