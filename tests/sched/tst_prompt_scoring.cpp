// Prompt scoring through the engine loop on the CPU reference runner (tiny synthetic preset): every prompt
// token after the first gets the logprob that a single full-prompt forward of the runner gives it, exactly
// once, whether the prompt runs in one prefill chunk or many, after a warm prefix cache, under preemption,
// and with max_tokens 0 (score only).
#include <QtTest>
#include <cmath>

#include "model/synth_model.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/reference_logprobs.h"
#include "sched/base_residency.h"
#include "sched/engine_loop.h"

using namespace loradesk;
using namespace loradesk::sched;
using namespace std::chrono_literals;

namespace {

struct Scored {
    std::vector<TokenOut> prompt;  // in event order
    std::vector<int> positions;    // position of each entry (the token scored is at position + 1)
    std::vector<int32_t> generated;
    FinishOut finish;
    bool scores_after_token = false;
    bool ok = false;
};

Scored run(RequestChannel& ch) {
    Scored s;
    for (;;) {
        auto e = ch.next(60000ms);
        if (!e) return s;
        if (auto* t = std::get_if<TokenOut>(&*e)) {
            s.generated.push_back(t->token_id);
        } else if (auto* p = std::get_if<PromptLogprobsOut>(&*e)) {
            s.scores_after_token |= !s.generated.empty();
            for (std::size_t i = 0; i < p->rows.size(); ++i) {
                s.prompt.push_back(p->rows[i]);
                s.positions.push_back(p->first_position + int(i));
            }
        } else {
            s.finish = std::get<FinishOut>(*e);
            s.ok = true;
            return s;
        }
    }
}

SubmitSpec request(std::vector<int32_t> prompt, int max_tokens, int prompt_logprobs) {
    SubmitSpec l;
    l.prompt = std::move(prompt);
    l.stop.max_tokens = max_tokens;
    l.stop.ignore_eos = true;
    l.prompt_logprobs = prompt_logprobs;
    return l;
}

// log-softmax in double of every row of one forward over the whole prompt on a fresh runner.
std::vector<std::vector<double>> reference(const std::string& dir, const std::vector<int32_t>& prompt) {
    runtime::cpu::CpuRunner runner(dir, 1);
    runner.allocate_kv((int(prompt.size()) + 15) / 16, 16);
    runner.configure_lora_slots(0, 8);
    return test::full_prompt_logprobs(runner, 0, prompt);
}

}  // namespace

class TstPromptScoring : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_dir;
    int m_vocab = 0;

    std::vector<int32_t> prompt(int n, int salt) const {
        std::vector<int32_t> p;
        for (int i = 0; i < n; ++i) p.push_back(int32_t((i * 37 + salt * 11 + 5) % m_vocab));
        return p;
    }

    EngineLoopConfig config(runtime::ModelRunner& runner, int n_pages, int max_batch_tokens) {
        EngineLoopConfig c;
        c.page_size = 16;
        c.kv_bytes = runner.kv_page_bytes(16) * std::size_t(n_pages);
        c.sched.capacity.max_batch_tokens = max_batch_tokens;
        c.sched.max_context = 512;
        return c;
    }

    // Every prompt token after the first, once, in order, with the reference logprob, rank and top-k.
    static void check_scores(const Scored& s, const std::vector<int32_t>& p,
                             const std::vector<std::vector<double>>& ref, int k) {
        QVERIFY(s.ok);
        QVERIFY(!s.scores_after_token);
        QCOMPARE(int(s.prompt.size()), int(p.size()) - 1);
        for (std::size_t i = 0; i < s.prompt.size(); ++i) {
            QCOMPARE(s.positions[i], int(i));
            const TokenOut& t = s.prompt[i];
            QCOMPARE(t.token_id, p[i + 1]);
            const std::vector<double>& lp = ref[i];
            QVERIFY2(std::abs(double(t.logprob) - lp[std::size_t(p[i + 1])]) < 1e-5,
                     qPrintable(QString("position %1: %2 vs %3").arg(i).arg(t.logprob).arg(lp[std::size_t(p[i + 1])])));
            int rank = 1;
            for (double v : lp) rank += v > lp[std::size_t(p[i + 1])];
            QCOMPARE(t.rank, rank);
            QCOMPARE(int(t.top.size()), k);
            for (std::size_t j = 0; j < t.top.size(); ++j) {
                QVERIFY(std::abs(double(t.top[j].second) - lp[std::size_t(t.top[j].first)]) < 1e-5);
                if (j) QVERIFY(t.top[j].second <= t.top[j - 1].second);
            }
            if (k > 0) QVERIFY(std::abs(double(t.top[0].second) - *std::max_element(lp.begin(), lp.end())) < 1e-5);
        }
    }

  private slots:
    void initTestCase() {
        model::SynthOptions o;
        o.preset = "tiny";
        o.out_dir = m_dir = (m_tmp.path() + "/tiny").toStdString();
        o.seed = 9;
        o.dtype = DType::f32;
        model::synth_model(o);
        runtime::cpu::CpuRunner probe(m_dir, 1);
        m_vocab = probe.config().vocab_size;
    }

    void scores_match_the_runner_data() {
        QTest::addColumn<int>("max_batch_tokens");
        QTest::addColumn<int>("max_tokens");
        QTest::newRow("one chunk") << 256 << 3;
        QTest::newRow("chunks of 7") << 7 << 3;
        QTest::newRow("score only, one chunk") << 256 << 0;
        QTest::newRow("score only, chunks of 5") << 5 << 0;
    }
    void scores_match_the_runner() {
        QFETCH(int, max_batch_tokens);
        QFETCH(int, max_tokens);
        const std::vector<int32_t> p = prompt(45, 1);
        const auto ref = reference(m_dir, p);
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        EngineLoop loop(runner, base, config(runner, 64, max_batch_tokens));
        Scored s = run(*loop.submit(request(p, max_tokens, 3)));
        check_scores(s, p, ref, 3);
        QCOMPARE(int(s.generated.size()), max_tokens);
        QCOMPARE(s.finish.reason, FinishReason::length);
        QCOMPARE(s.finish.completion_tokens, max_tokens);
        if (max_tokens > 0) {  // the generated tokens are the unscored request's
            Scored plain = run(*loop.submit(request(p, max_tokens, -1)));
            QVERIFY(plain.prompt.empty());
            QCOMPARE(plain.generated, s.generated);
        }
    }

    // A warm cache holds the whole prompt; the scoring request must still compute (and score) every row, and
    // its KV serves the next request.
    void warm_prefix_cache_is_not_used_for_scored_rows() {
        const std::vector<int32_t> p = prompt(50, 2);
        const auto ref = reference(m_dir, p);
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        EngineLoop loop(runner, base, config(runner, 64, 256));
        Scored warm = run(*loop.submit(request(p, 2, -1)));
        QVERIFY(warm.ok);
        Scored s = run(*loop.submit(request(p, 2, 0)));
        check_scores(s, p, ref, 0);
        QCOMPARE(s.finish.cached_tokens, 0);
        Scored after = run(*loop.submit(request(p, 2, -1)));
        QVERIFY(after.finish.cached_tokens >= 48);
    }

    // Tight KV: long generations preempt each other (recompute); each prompt is still scored exactly once.
    void preemption_neither_repeats_nor_loses_rows() {
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        EngineLoop loop(runner, base, config(runner, 12, 24));
        std::vector<std::vector<int32_t>> prompts;
        std::vector<std::shared_ptr<RequestChannel>> chans;
        for (int k = 0; k < 4; ++k) {
            prompts.push_back(prompt(30 + 3 * k, 10 + k));
            chans.push_back(loop.submit(request(prompts.back(), 40, 2)));
        }
        int preempted = 0;
        for (std::size_t k = 0; k < chans.size(); ++k) {
            Scored s = run(*chans[k]);
            check_scores(s, prompts[k], reference(m_dir, prompts[k]), 2);
            QCOMPARE(int(s.generated.size()), 40);
            preempted += s.finish.preemptions;
        }
        QVERIFY(preempted > 0);
    }

    // A long request A fills 10 of 12 pages; the scoring request B behind it gets 3 prompt tokens a step (4-token
    // budget, A's decode first). When A needs its 11th page B holds about 2 and has scored ~30 of its 59 rows:
    // B is preempted mid-scoring, its pages go to the prefix cache, and on re-admission it may reuse only the
    // scored part. Its scores must still be exactly the reference, each row once.
    void preemption_in_the_middle_of_scoring() {
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        EngineLoop loop(runner, base, config(runner, 12, 4));
        const std::vector<int32_t> a = prompt(150, 20), b = prompt(60, 21);
        auto ca = loop.submit(request(a, 40, -1));
        auto cb = loop.submit(request(b, 2, 1));
        Scored sa = run(*ca), sb = run(*cb);
        QVERIFY(sa.ok);
        QCOMPARE(int(sa.generated.size()), 40);
        check_scores(sb, b, reference(m_dir, b), 1);
        QVERIFY2(sb.finish.preemptions > 0, "B was not preempted: the scenario no longer tests a recompute");
        QCOMPARE(sb.finish.cached_tokens, 0);
    }

    // Many scoring rows at once stay within max_logits_rows per step and still all arrive.
    void rows_per_step_are_capped() {
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        EngineLoopConfig c = config(runner, 64, 256);
        c.sched.max_logits_rows = 10;
        EngineLoop loop(runner, base, c);
        const std::vector<int32_t> p = prompt(60, 3);
        Scored s = run(*loop.submit(request(p, 1, 1)));
        check_scores(s, p, reference(m_dir, p), 1);
        QVERIFY(loop.stats().counters.steps >= 7);  // 59 rows, at most 9 a step beside the sampling row
    }

    void max_tokens_zero_needs_scoring() {
        runtime::cpu::CpuRunner runner(m_dir, 1);
        BaseOnlyResidency base;
        EngineLoop loop(runner, base, config(runner, 16, 64));
        bool refused = false;
        try {
            loop.submit(request(prompt(5, 4), 0, -1));
        } catch (const ExpectedError& e) {
            refused = e.code() == ErrorCode::invalid_argument &&
                      std::string(e.what()).find("max_tokens") != std::string::npos;
        }
        QVERIFY(refused);
        Scored one = run(*loop.submit(request({7}, 0, 0)));  // one token: nothing to score
        QVERIFY(one.ok);
        QVERIFY(one.prompt.empty());
        QCOMPARE(one.finish.reason, FinishReason::length);
    }
};

QTEST_GUILESS_MAIN(TstPromptScoring)
#include "tst_prompt_scoring.moc"
