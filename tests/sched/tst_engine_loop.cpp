// engine/sched EngineLoop: threaded submit/cancel, event streams (tokens, logprobs, finish with usage),
// stats, validation errors at submit, stop strings via cancel, and shutdown with requests in flight.
#include <QtTest>

#include <thread>

#include "core/error.h"
#include "sched/base_residency.h"
#include "sim_harness.h"

using namespace loradesk;
using namespace loradesk::sched;
using namespace loradesk::sched::test;
using namespace std::chrono_literals;

namespace {

struct Collected {
    std::vector<int32_t> tokens;
    std::vector<TokenOut> outs;
    FinishOut finish;
    bool finished = false;
};

Collected drain(RequestChannel& ch) {
    Collected c;
    while (!c.finished) {
        auto e = ch.next(5000ms);
        if (!e) break;
        if (auto* t = std::get_if<TokenOut>(&*e)) {
            c.tokens.push_back(t->token_id);
            c.outs.push_back(*t);
        } else {
            c.finish = std::get<FinishOut>(*e);
            c.finished = true;
        }
    }
    return c;
}

EngineLoopConfig loop_config() {
    EngineLoopConfig c;
    c.kv_bytes = std::size_t(64) * 4 * 64;  // 64 pages of 4 tokens with the null runner's 64 B per token
    c.page_size = 4;
    c.sched.capacity.max_batch_tokens = 32;
    c.sched.capacity.max_loras = 2;
    c.sched.max_context = 512;
    return c;
}

}  // namespace

class TstEngineLoop : public QObject {
    Q_OBJECT
  private slots:
    void concurrent_requests_stream_their_tokens() {
        NullRunner runner(null_model());
        ScriptedResidency residency(2);
        EngineLoop loop(runner, residency, loop_config());
        QCOMPARE(loop.n_pages(), 64);
        std::vector<std::shared_ptr<RequestChannel>> chans;
        std::vector<std::vector<int32_t>> prompts;
        for (int i = 0; i < 6; ++i) {
            SubmitSpec r;
            r.ns = i % 3 == 0 ? "" : "ad" + std::to_string(i % 3);
            r.prompt = ramp(6 + i, 2);
            r.stop.max_tokens = 5;
            prompts.push_back(r.prompt);
            chans.push_back(loop.submit(std::move(r)));
        }
        for (std::size_t i = 0; i < chans.size(); ++i) {
            Collected c = drain(*chans[i]);
            QVERIFY(c.finished);
            QCOMPARE(c.finish.reason, FinishReason::length);
            QCOMPARE(c.finish.completion_tokens, 5);
            QCOMPARE(c.finish.prompt_tokens, int(prompts[i].size()));
            QVERIFY(c.finish.latency_ms >= c.finish.ttft_ms);
            std::vector<int32_t> expect;
            std::vector<int32_t> p = prompts[i];
            for (int k = 0; k < 5; ++k) {
                expect.push_back(runner.expected_next(p));
                p.push_back(expect.back());
            }
            QCOMPARE(c.tokens, expect);
        }
        LoopStats st = loop.stats();
        QCOMPARE(st.running + st.waiting, 0);
        QCOMPARE(st.counters.generated_tokens, qint64(30));
        QCOMPARE(st.pages_total, 64);
        QCOMPARE(st.pages_free + st.pages_cached, 64);
    }
    void logprobs_and_cached_usage() {
        NullRunner runner(null_model());
        BaseOnlyResidency residency;
        EngineLoop loop(runner, residency, loop_config());
        SubmitSpec r;
        r.prompt = ramp(13, 4);
        r.stop.max_tokens = 2;
        r.sampling.params.top_logprobs = 3;
        Collected first = drain(*loop.submit(r));
        QCOMPARE(first.finish.cached_tokens, 0);
        QCOMPARE(first.outs.size(), std::size_t(2));
        QCOMPARE(first.outs[0].top.size(), std::size_t(3));
        QCOMPARE(first.outs[0].top[0].first, first.outs[0].token_id);
        QVERIFY(first.outs[0].logprob < 0 && first.outs[0].logprob > -0.01f);
        Collected again = drain(*loop.submit(r));
        QCOMPARE(again.finish.cached_tokens, 12);  // three full pages of the 13-token prompt
        QCOMPARE(again.tokens, first.tokens);
    }
    void evict_adapter_drops_its_cache() {
        NullRunner runner(null_model());
        ScriptedResidency residency(2);
        EngineLoop loop(runner, residency, loop_config());
        SubmitSpec r;
        r.ns = "ad1";
        r.prompt = ramp(17, 3);
        r.stop.max_tokens = 3;
        QVERIFY(drain(*loop.submit(r)).finished);
        r.ns = "";
        QVERIFY(drain(*loop.submit(r)).finished);
        const int both = loop.stats().pages_cached;
        QCOMPARE(both, 2 * 4);  // 19 computed tokens = 4 full pages of 4, in each namespace
        loop.evict_adapter("ad1");
        for (int i = 0; i < 1000 && loop.stats().pages_cached != 4; ++i) std::this_thread::sleep_for(1ms);
        QCOMPARE(loop.stats().pages_cached, 4);
        r.ns = "ad1";
        Collected again = drain(*loop.submit(r));
        QCOMPARE(again.finish.cached_tokens, 0);
    }
    void submit_validates() {
        NullRunner runner(null_model(97, 64));
        BaseOnlyResidency residency;
        EngineLoop loop(runner, residency, loop_config());
        SubmitSpec r;
        r.prompt = ramp(64);
        try {
            loop.submit(r);
            QFAIL("expected context_too_long");
        } catch (const ExpectedError& e) {
            QCOMPARE(e.code(), ErrorCode::context_too_long);
            QVERIFY(QString(e.what()).startsWith("This model's maximum context length is 64 tokens."));
        }
        r.prompt = ramp(63);
        r.stop.max_tokens = 1;
        {
            EngineLoopConfig tiny = loop_config();
            tiny.kv_bytes = 4 * 4 * 64;  // 4 pages of 4 tokens
            EngineLoop small(runner, residency, tiny);
            try {
                small.submit(r);
                QFAIL("expected capacity");
            } catch (const ExpectedError& e) {
                QCOMPARE(e.code(), ErrorCode::capacity);
            }
        }
        r.sampling.params.temperature = -1.0f;
        r.prompt = {1, 2};
        QVERIFY_THROWS_EXCEPTION(ExpectedError, loop.submit(r));
        r.sampling.params.temperature = 0.0f;
        r.prompt = {1, 2, 500};
        QVERIFY_THROWS_EXCEPTION(ExpectedError, loop.submit(r));
        r.prompt = {1, 2};
        r.ns = "some-adapter";
        QVERIFY_THROWS_EXCEPTION(ExpectedError, loop.submit(r));
    }
    void cancel_and_stop_string_from_other_threads() {
        NullRunner runner(null_model());
        // Slow steps, so that the cancels surely arrive while both requests still run.
        runner.on_forward = [](const runtime::ForwardBatch&) { std::this_thread::sleep_for(2ms); };
        BaseOnlyResidency residency;
        EngineLoopConfig cfg = loop_config();
        cfg.kv_bytes *= 4;
        EngineLoop loop(runner, residency, cfg);
        SubmitSpec r;
        r.prompt = ramp(5, 1);
        r.stop.max_tokens = 400;
        auto a = loop.submit(r);
        auto b = loop.submit(r);
        // The text layer sees a stop string in b's text after its first token and ends it.
        auto e = b->next(5000ms);
        QVERIFY(e && std::holds_alternative<TokenOut>(*e));
        std::thread t([&] {
            loop.cancel(a->id());
            loop.cancel(b->id(), FinishReason::stop, "###");
        });
        t.join();
        Collected ca = drain(*a), cb = drain(*b);
        QCOMPARE(ca.finish.reason, FinishReason::cancelled);
        QCOMPARE(cb.finish.reason, FinishReason::stop);
        QCOMPARE(cb.finish.detail, std::string("###"));
        QVERIFY(ca.finish.completion_tokens < 400);
        for (int i = 0; i < 100 && loop.stats().running; ++i) std::this_thread::sleep_for(1ms);
        LoopStats st = loop.stats();
        QCOMPARE(st.pages_free + st.pages_cached, st.pages_total);
    }
    void shutdown_cancels_open_requests() {
        NullRunner runner(null_model());
        runner.on_forward = [](const runtime::ForwardBatch&) { std::this_thread::sleep_for(1ms); };
        BaseOnlyResidency residency;
        std::shared_ptr<RequestChannel> ch;
        {
            EngineLoop loop(runner, residency, loop_config());
            SubmitSpec r;
            r.prompt = ramp(5, 1);
            r.stop.max_tokens = 500;
            ch = loop.submit(r);
            QVERIFY(ch->next(5000ms).has_value());
        }
        Collected c = drain(*ch);
        QVERIFY(c.finished);
        QCOMPARE(c.finish.reason, FinishReason::cancelled);
    }
};

QTEST_GUILESS_MAIN(TstEngineLoop)
#include "tst_engine_loop.moc"
