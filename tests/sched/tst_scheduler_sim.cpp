// engine/sched Scheduler: deterministic simulations on the NullRunner, stepped against expected tables:
// adapter cap, deferral while loading, failure, starvation bound, preemption + recompute, cancellation,
// context-length rejection, chunked prefill budget, stop conditions, and concurrent == alone outputs.
#include <QtTest>

#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "sim_harness.h"

using namespace loradesk;
using namespace loradesk::sched;
using namespace loradesk::sched::test;

namespace {

SchedulerConfig config(int max_loras = 2, int budget = 64, int max_running = 16, int ctx = 1024) {
    SchedulerConfig c;
    c.capacity.max_loras = max_loras;
    c.capacity.max_batch_tokens = budget;
    c.capacity.max_running = max_running;
    c.capacity.max_wait_steps = 8;
    c.max_context = ctx;
    return c;
}

int distinct_adapter_slots(const runtime::ForwardBatch& b) {
    std::set<int> s;
    for (int slot : b.seq_lora_slot)
        if (slot) s.insert(slot);
    return int(s.size());
}

}  // namespace

class TstSchedulerSim : public QObject {
    Q_OBJECT
  private slots:
    void chunked_prefill_budget() {
        Sim sim(64, 4, config(2, 16));
        uint64_t d = sim.sched.submit(spec("", ramp(6, 1), 20));  // starts decoding first
        sim.step();
        uint64_t p = sim.sched.submit(spec("", ramp(40, 3), 2));
        // Expected table: tokens each runs per step. Decode first, the long prompt gets the rest.
        const int table[][2] = {{1, 15}, {1, 15}, {1, 10}, {1, 1}, {1, 0}};
        for (auto& row : table) {
            QVERIFY(sim.step());
            QCOMPARE(sim.tokens_of(d), row[0]);
            QCOMPARE(sim.tokens_of(p), row[1]);
            QVERIFY(sim.plan.batch.n_tokens() <= 16);
        }
        QVERIFY(sim.done.count(p));
        QCOMPARE(sim.done[p]->finish_reason, FinishReason::length);
        QCOMPARE(std::vector<int32_t>(sim.done[p]->generated().begin(), sim.done[p]->generated().end()),
                 sim.alone(ramp(40, 3), 2));
    }
    void distinct_adapter_cap_per_step() {
        Sim sim(256, 4, config(2, 64), 2);
        int max_seen = 0;
        sim.runner.on_forward = [&](const runtime::ForwardBatch& b) {
            max_seen = std::max(max_seen, distinct_adapter_slots(b));
        };
        for (int i = 0; i < 12; ++i) sim.sched.submit(spec("ad" + std::to_string(i % 4), ramp(5 + i, i), 3 + i % 3));
        sim.run_to_end();
        QCOMPARE(int(sim.done.size()), 12);
        QCOMPARE(max_seen, 2);
        QVERIFY(!sim.residency.too_many);
        for (auto& [id, s] : sim.done) QCOMPARE(s->finish_reason, FinishReason::length);
        QCOMPARE(sim.residency.prefetched.size(), std::size_t(4));
    }
    void loading_adapter_is_deferred_not_failed() {
        Sim sim(64, 4, config());
        sim.residency.loading_calls["slow"] = 3;
        uint64_t a = sim.sched.submit(spec("slow", ramp(6, 0), 2));
        uint64_t b = sim.sched.submit(spec("", ramp(6, 1), 4));
        // Expected table: step -> (tokens of a, tokens of b).
        const int table[][2] = {{0, 6}, {0, 1}, {0, 1}, {6, 1}, {1, 0}};
        for (auto& row : table) {
            sim.step();
            QCOMPARE(sim.tokens_of(a), row[0]);
            QCOMPARE(sim.tokens_of(b), row[1]);
        }
        QVERIFY(sim.done.count(a) && sim.done.count(b));
        QCOMPARE(sim.done[a]->finish_reason, FinishReason::length);
    }
    void failed_adapter_fails_its_requests() {
        Sim sim(64, 4, config());
        sim.residency.failing.insert("bad");
        uint64_t a = sim.sched.submit(spec("bad", ramp(6, 0), 2));
        uint64_t b = sim.sched.submit(spec("", ramp(6, 1), 2));
        sim.run_to_end();
        QCOMPARE(sim.done[a]->finish_reason, FinishReason::error);
        QCOMPARE(sim.done[a]->finish_detail, std::string("adapter bad is corrupt"));
        QCOMPARE(sim.done[b]->finish_reason, FinishReason::length);
        QCOMPARE(sim.pool.n_free() + sim.cache.n_evictable_pages(), sim.pool.n_pages());
    }
    void starvation_bound() {
        // One slot; adapter "a" gets a new request every step; one request for "b" must still be served.
        SchedulerConfig c = config(1, 64, 4);
        c.capacity.max_wait_steps = 6;
        Sim sim(512, 4, c, 1);
        uint64_t b = 0;
        int served_at = -1;
        for (int step = 0; step < 80 && served_at < 0; ++step) {
            sim.sched.submit(spec("a", ramp(3, step), 4));
            if (step == 1) b = sim.sched.submit(spec("b", ramp(3, 99), 1));
            sim.step();
            if (step > 1 && sim.tokens_of(b) > 0) served_at = step;
        }
        QVERIFY(served_at > 0);
        // Aged after 6 steps, then the running "a" requests (max_tokens 4) drain within ~5 steps.
        QVERIFY2(served_at <= 1 + 6 + 6, qPrintable(QString("served at step %1").arg(served_at)));
    }
    // KV pressure as under the S-LoRA workload: many requests whose prompts fit at admission but whose
    // completions together outgrow the pool. Every request finishes with the tokens it would produce alone,
    // none starves, and preemptions stay bounded; with an admission reserve covering max_tokens, none at all.
    void kv_pressure_data() {
        QTest::addColumn<int>("reserve");
        QTest::newRow("reserve 0") << 0;
        QTest::newRow("reserve 16") << 16;
        QTest::newRow("reserve covers max_tokens") << 24;
    }
    void kv_pressure() {
        QFETCH(int, reserve);
        SchedulerConfig c = config(4, 64, 32);
        c.capacity.reserve_tokens = reserve;
        Sim sim(48, 4, c);  // 192 tokens of KV for 24 requests of up to 12 + 24 tokens
        std::mt19937 rng(7);
        std::map<uint64_t, std::pair<std::vector<int32_t>, int>> asked;
        for (int i = 0; i < 24; ++i) {
            auto prompt = ramp(4 + int(rng() % 9), int32_t(i * 3));
            const int max_tokens = 8 + int(rng() % 17);
            asked[sim.sched.submit(spec(i % 3 ? "ad" + std::to_string(i % 3) : "", prompt, max_tokens))] = {prompt,
                                                                                                            max_tokens};
            if (i % 4 == 3) sim.step();  // arrivals spread over steps
        }
        const int steps = sim.run_to_end(5000);
        QVERIFY2(steps < 5000, "the simulation did not drain");
        QCOMPARE(int(sim.done.size()), 24);
        for (auto& [id, want] : asked) {
            const Sequence& s = *sim.done.at(id);
            QCOMPARE(s.finish_reason, FinishReason::length);
            QCOMPARE(std::vector<int32_t>(s.generated().begin(), s.generated().end()),
                     sim.alone(want.first, want.second));
        }
        const int64_t preemptions = sim.sched.counters().preemptions;
        QVERIFY2(preemptions <= 24 * 4, qPrintable(QString("%1 preemptions").arg(preemptions)));
        if (reserve >= 24) QCOMPARE(preemptions, qint64(0));
        QCOMPARE(sim.pool.n_free() + sim.cache.n_cached_pages(), sim.pool.n_pages());
    }

    void preemption_and_recompute() {
        // 8 pages of 4 tokens: two requests of 12 prompt + 16 generated cannot both finish together.
        Sim sim(8, 4, config());
        uint64_t a = sim.sched.submit(spec("x", ramp(12, 1), 16));
        uint64_t b = sim.sched.submit(spec("x", ramp(12, 50), 16));
        int steps = sim.run_to_end();
        QVERIFY(steps < 200);
        QVERIFY(sim.done[b]->n_preemptions > 0);
        QCOMPARE(sim.done[a]->n_preemptions, 0);
        QCOMPARE(sim.sched.counters().preemptions, qint64(sim.done[b]->n_preemptions));
        // Recompute gives the same tokens as running alone, and its pages were cached in its own namespace.
        auto gen = [&](uint64_t id) {
            return std::vector<int32_t>(sim.done[id]->generated().begin(), sim.done[id]->generated().end());
        };
        QCOMPARE(gen(a), sim.alone(ramp(12, 1), 16));
        QCOMPARE(gen(b), sim.alone(ramp(12, 50), 16));
        QVERIFY(sim.cache.stats("x").hit_tokens > 0);
        QCOMPARE(sim.cache.stats("").hit_tokens, qint64(0));
        sim.cache.clear();
        QCOMPARE(sim.pool.n_free(), sim.pool.n_pages());
    }
    void cancellation_frees_everything() {
        Sim sim(32, 4, config());
        uint64_t a = sim.sched.submit(spec("", ramp(10, 1), 50));
        uint64_t w = sim.sched.submit(spec("", ramp(3, 2), 50));
        sim.step();
        sim.step();
        QVERIFY(sim.pool.n_free() < 32);
        sim.sched.finish(a, FinishReason::cancelled);
        sim.sched.finish(w, FinishReason::stop, "</s>");  // a stop string found by the text layer
        sim.sched.finish(a, FinishReason::cancelled);     // twice: ignored
        sim.step();
        QCOMPARE(sim.done[a]->finish_reason, FinishReason::cancelled);
        QCOMPARE(sim.done[w]->finish_detail, std::string("</s>"));
        QCOMPARE(sim.sched.n_running() + sim.sched.n_waiting(), 0);
        QCOMPARE(sim.pool.n_free() + sim.cache.n_evictable_pages(), 32);
        sim.cache.clear();
        QCOMPARE(sim.pool.n_free(), 32);
    }
    void context_length_rejection() {
        Sim sim(64, 4, config(2, 64, 16, 100));
        try {
            sim.sched.submit(spec("", ramp(100, 0), 20));
            QFAIL("expected context_too_long");
        } catch (const ExpectedError& e) {
            QCOMPARE(e.code(), ErrorCode::context_too_long);
            QCOMPARE(QString(e.what()),
                     QString("This model's maximum context length is 100 tokens. However, you requested 120 tokens "
                             "(100 in the messages, 20 in the completion). Please reduce the length of the messages or "
                             "completion."));
        }
        // A prompt that fits is accepted and its completion clipped to the context.
        uint64_t id = sim.sched.submit(spec("", ramp(90, 0), 20));
        QCOMPARE(sim.sched.find(id)->stop.max_tokens, 10);
        sim.run_to_end();
        QCOMPARE(sim.done[id]->n_generated(), 10);
        QVERIFY_THROWS_EXCEPTION(ExpectedError, sim.sched.submit(spec("", {}, 5)));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, sim.sched.submit(spec("", ramp(3), 0)));
    }
    void stop_token_ids_and_eos() {
        Sim sim(64, 4, config());
        std::vector<int32_t> prompt = ramp(5, 3);
        std::vector<int32_t> expect = sim.alone(prompt, 6);
        SubmitSpec s = spec("", prompt, 6);
        s.stop.eos_token_ids = {expect[2]};
        uint64_t eos = sim.sched.submit(s);
        s.stop.ignore_eos = true;
        uint64_t ignored = sim.sched.submit(s);
        s.stop.ignore_eos = false;
        s.stop.eos_token_ids.clear();
        s.stop.stop_token_ids = {expect[1]};
        s.stop.min_tokens = 3;  // the stop id at position 1 is too early; one later (if any) counts
        uint64_t min = sim.sched.submit(s);
        sim.run_to_end();
        QCOMPARE(sim.done[eos]->finish_reason, FinishReason::stop);
        QCOMPARE(sim.done[eos]->n_generated(), 3);
        QCOMPARE(sim.done[eos]->finish_detail, std::to_string(expect[2]));
        QCOMPARE(sim.done[ignored]->n_generated(), 6);
        QVERIFY(sim.done[min]->n_generated() >= 3);
    }
    void concurrent_equals_alone_with_shared_prefixes() {
        // The null runner's logits hash the whole KV each sequence reads, so any wrong page, bad
        // prefix reuse or lost KV changes the tokens.
        Sim sim(96, 4, config(3, 24, 8));
        std::vector<std::pair<uint64_t, std::vector<int32_t>>> reqs;
        std::vector<int> max_tokens;
        const std::vector<std::string> ns{"", "a", "b", "a"};
        for (int i = 0; i < 14; ++i) {
            std::vector<int32_t> prompt = ramp(9 + (i % 3) * 4, 5);  // shared prefixes of different lengths
            for (int k = 0; k < i % 4; ++k) prompt.push_back((i * 13 + k) % 97);
            max_tokens.push_back(3 + (i * 5) % 11);
            reqs.emplace_back(sim.sched.submit(spec(ns[std::size_t(i % 4)], prompt, max_tokens.back())), prompt);
            if (i % 3 == 0) sim.step();
        }
        sim.run_to_end();
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            auto& s = sim.done[reqs[i].first];
            QCOMPARE(std::vector<int32_t>(s->generated().begin(), s->generated().end()),
                     sim.alone(reqs[i].second, max_tokens[i]));
        }
        QVERIFY(sim.cache.stats("").hit_tokens + sim.cache.stats("a").hit_tokens + sim.cache.stats("b").hit_tokens > 0);
        sim.cache.clear();
        QCOMPARE(sim.pool.n_free(), sim.pool.n_pages());
    }
    void randomized_operations_data() {
        QTest::addColumn<unsigned>("seed");
        QTest::addColumn<int>("policy");
        for (unsigned seed : {1u, 2u, 3u, 4u}) {
            QTest::newRow(qPrintable(QString("fcfs %1").arg(seed))) << seed << 0;
            QTest::newRow(qPrintable(QString("pack %1").arg(seed))) << seed << 1;
        }
    }
    // Random submits, cancels, adapter unloads and loading adapters against a small pool: page accounting
    // holds after every step, every request that ran to its length gives exactly its alone tokens (through
    // preemption, recompute and namespace eviction), and everything is free at the end.
    void randomized_operations() {
        QFETCH(unsigned, seed);
        QFETCH(int, policy);
        SchedulerConfig c = config(2, 12, 6);
        c.capacity.policy = policy ? Policy::pack : Policy::fcfs;
        Sim sim(24, 4, c, 2);
        std::mt19937 rng(seed);
        auto pick = [&](int n) { return int(rng() % unsigned(n)); };
        const std::vector<std::string> spaces{"", "a", "b", "c"};
        std::map<uint64_t, std::pair<std::vector<int32_t>, int>> submitted;
        std::vector<uint64_t> live;
        for (int step = 0; step < 1500; ++step) {
            int op = pick(10);
            if (op < 3 && live.size() < 12) {
                std::vector<int32_t> prompt = ramp(4 * pick(4), 11);
                for (int k = 1 + pick(9); k > 0; --k) prompt.push_back(pick(97));
                int max_tokens = 1 + pick(20);
                uint64_t id = sim.sched.submit(spec(spaces[std::size_t(pick(4))], prompt, max_tokens));
                submitted[id] = {prompt, max_tokens};
                live.push_back(id);
            } else if (op == 3 && !live.empty() && pick(4) == 0) {
                sim.sched.finish(live[std::size_t(pick(int(live.size())))], FinishReason::cancelled);
            } else if (op == 4 && pick(5) == 0) {
                sim.cache.evict_namespace(spaces[std::size_t(pick(4))]);
            } else if (op == 5 && pick(10) == 0) {
                sim.residency.loading_calls[spaces[std::size_t(1 + pick(3))]] = 1 + pick(3);
            }
            sim.step();
            std::erase_if(live, [&](uint64_t id) { return sim.sched.find(id) == nullptr; });
            long refs = 0, held = sim.cache.n_cached_pages();
            for (int p = 0; p < sim.pool.n_pages(); ++p) refs += sim.pool.ref_count(p);
            for (uint64_t id : live) {
                const Sequence* s = sim.sched.find(id);
                held += long(s->pages.size());
                QVERIFY(int(s->pages.size()) >= sim.pool.pages_for_tokens(s->n_computed));
            }
            QCOMPARE(refs, held);
        }
        sim.run_to_end();
        QCOMPARE(sim.sched.n_running() + sim.sched.n_waiting(), 0);
        int checked = 0;
        for (auto& [id, s] : sim.done) {
            if (s->finish_reason != FinishReason::length) continue;
            auto& [prompt, max_tokens] = submitted[id];
            QCOMPARE(std::vector<int32_t>(s->generated().begin(), s->generated().end()), sim.alone(prompt, max_tokens));
            ++checked;
        }
        QVERIFY(checked > 20);
        QVERIFY(sim.sched.counters().preemptions > 0);
        sim.cache.clear();
        QCOMPARE(sim.pool.n_free(), sim.pool.n_pages());
    }
};

QTEST_GUILESS_MAIN(TstSchedulerSim)
#include "tst_scheduler_sim.moc"
