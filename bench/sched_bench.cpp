// sched_bench: scheduler + KV bookkeeping cost per step (plan + commit, the runner excluded) with 256
// running requests over 4 adapters and the base model, on the NullRunner. Checks the generated tokens
// before timing and prints the runner's own (trivial) per-step time as the in-run baseline.
#include <time.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "sched/engine_loop.h"
#include "sched/null_runner.h"
#include "sched/scheduler.h"

using namespace loradesk;
using namespace loradesk::sched;
// Thread CPU time: the build machine is shared, and wall time mostly measures the neighbours.
struct Clock {
    using time_point = std::chrono::nanoseconds;
    static time_point now() {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return std::chrono::nanoseconds(int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
    }
};

namespace {

class AllReady final : public lora::AdapterResidency {
  public:
    int n_slots() const override { return 4; }
    void prefetch(const std::string&) override {}
    std::vector<lora::SlotGrant> acquire_slots(const std::vector<std::string>& digests) override {
        std::vector<lora::SlotGrant> out(digests.size());
        for (std::size_t i = 0; i < digests.size(); ++i) out[i] = {lora::Residency::ready, int(i) + 1, {}};
        return out;
    }
};

constexpr int kVocab = 512;

struct Bench {
    static constexpr int kRunning = 256;
    model::ModelConfig cfg = [] {
        model::ModelConfig c;
        c.vocab_size = kVocab;
        c.max_position_embeddings = 8192;
        return c;
    }();
    NullRunner runner{cfg, /*hash_kv=*/false};
    AllReady residency;
    kv::PagePool pool{16384, 16};
    kv::PrefixCache cache{pool};
    Scheduler sched;
    std::mt19937 rng{42};
    StepPlan plan;
    std::vector<float> logits;
    std::vector<int32_t> sampled;
    int64_t checked = 0;
    int64_t plan_ns = 0, commit_ns = 0;

    static SchedulerConfig sched_config() {
        SchedulerConfig c;
        c.capacity.max_running = kRunning;
        c.capacity.max_batch_tokens = 2048;
        c.capacity.max_loras = 4;
        c.max_context = 8192;
        return c;
    }
    Bench() : sched(sched_config(), pool, cache, residency) {
        runner.allocate_kv(pool.n_pages(), pool.page_size());
        runner.configure_lora_slots(residency.n_slots(), 16);
    }

    void submit() {
        SubmitSpec s;
        int kind = int(rng() % 5);
        s.ns = kind == 0 ? "" : "adapter-" + std::to_string(kind);
        int shared = 32 + int(rng() % 64), own = 1 + int(rng() % 64);
        for (int i = 0; i < shared; ++i)
            s.prompt.push_back((kind * 1000 + i * 7) % kVocab);  // per-adapter system prompt
        for (int i = 0; i < own; ++i) s.prompt.push_back(int32_t(rng() % kVocab));
        s.stop.max_tokens = 64 + int(rng() % 192);
        sched.submit(std::move(s));
    }
    // One step; returns the nanoseconds spent in the scheduler (plan + commit) and in the runner.
    std::pair<int64_t, int64_t> step() {
        while (sched.n_running() + sched.n_waiting() < kRunning) submit();
        auto t0 = Clock::now();
        sched.plan(plan);
        auto t1 = Clock::now();
        runner.forward(plan.batch, logits);
        sampled.clear();
        for (std::size_t i = 0; i < plan.sampling.size(); ++i)
            sampled.push_back(greedy_sample({logits.data() + i * kVocab, kVocab}, -1).token_id);
        auto t2 = Clock::now();
        sched.commit(plan, sampled);
        auto t3 = Clock::now();
        for (auto& s : sched.take_finished()) check(*s);
        auto ns = [](auto d) { return int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
        plan_ns += ns(t1 - t0);
        commit_ns += ns(t3 - t2);
        return {ns(t1 - t0) + ns(t3 - t2), ns(t2 - t1)};
    }
    void check(const Sequence& s) {
        for (std::size_t i = std::size_t(s.n_prompt); i < s.tokens.size(); ++i) {
            std::span<const int32_t> before(s.tokens.data(), i);
            if (runner.expected_next(before) != s.tokens[i]) {
                std::fprintf(stderr, "sched_bench: request %llu generated a wrong token at %zu\n",
                             (unsigned long long)s.id, i);
                std::exit(1);
            }
        }
        ++checked;
    }
};

}  // namespace

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
    Bench b;
    for (int i = 0; i < 600; ++i) b.step();  // warm up into steady state (finishing and refilling)
    if (b.checked == 0 || b.sched.n_running() < 200) {
        std::fprintf(stderr, "sched_bench: not in steady state (checked %lld, running %d)\n", (long long)b.checked,
                     b.sched.n_running());
        return 1;
    }
    int64_t sched_ns = 0, runner_ns = 0, tokens = 0;
    b.plan_ns = b.commit_ns = 0;
    std::vector<int64_t> per_step;
    for (int i = 0; i < steps; ++i) {
        auto [s, r] = b.step();
        sched_ns += s;
        runner_ns += r;
        per_step.push_back(s);
        tokens += b.plan.batch.n_tokens();
    }
    std::sort(per_step.begin(), per_step.end());
    auto pct = [&](double q) { return per_step[std::size_t(q * double(per_step.size() - 1))] / 1e3; };
    std::printf("sched_bench: %d steps, %d running, %.1f tokens/step, %lld requests checked\n", steps,
                b.sched.n_running(), double(tokens) / steps, (long long)b.checked);
    std::printf("  scheduler (plan + commit): median %.2f us/step, p90 %.2f, p99 %.2f, mean %.2f (thread CPU time)\n",
                pct(0.5), pct(0.9), pct(0.99), sched_ns / 1e3 / steps);
    std::printf("  of which plan %.2f us, commit %.2f us (means)\n", b.plan_ns / 1e3 / steps,
                b.commit_ns / 1e3 / steps);
    std::printf("  baseline, null runner + greedy over the logits: %.2f us/step (scheduler/baseline %.2f)\n",
                runner_ns / 1e3 / steps, double(sched_ns) / double(runner_ns));
    std::printf("  prefix cache: %d pages cached, preemptions %lld\n", b.cache.n_cached_pages(),
                (long long)b.sched.counters().preemptions);
    return 0;
}
