// End to end on the CPU reference runner (tiny synthetic preset): requests run concurrently through the
// engine loop -- shared prefixes, different lengths, chunked prefill, prefix-cache hits, preemption --
// produce exactly the greedy tokens each produces alone on a fresh engine.
#include <QtTest>

#include "model/synth_model.h"
#include "runtime/cpu/cpu_runner.h"
#include "sched/base_residency.h"
#include "sched/engine_loop.h"

using namespace loradesk;
using namespace loradesk::sched;
using namespace std::chrono_literals;

namespace {

struct Req {
    std::vector<int32_t> prompt;
    int max_tokens = 0;
};

std::vector<int32_t> run(RequestChannel& ch, FinishOut* finish = nullptr) {
    std::vector<int32_t> out;
    for (;;) {
        auto e = ch.next(60000ms);
        if (!e) return {-1};
        if (auto* t = std::get_if<TokenOut>(&*e)) {
            out.push_back(t->token_id);
        } else {
            if (finish) *finish = std::get<FinishOut>(*e);
            return out;
        }
    }
}

SubmitSpec request(const Req& r) {
    SubmitSpec l;
    l.prompt = r.prompt;
    l.stop.max_tokens = r.max_tokens;
    l.stop.ignore_eos = true;
    return l;
}

}  // namespace

class TstSchedCpuE2e : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_dir;
    std::vector<Req> m_reqs;

    EngineLoopConfig config(runtime::ModelRunner& runner, int n_pages) {
        EngineLoopConfig c;
        c.page_size = 16;
        c.kv_bytes = runner.kv_page_bytes(16) * std::size_t(n_pages);
        c.sched.capacity.max_batch_tokens = 32;  // forces chunked prefill mixed with decode
        c.sched.max_context = 512;
        return c;
    }

  private slots:
    void initTestCase() {
        model::SynthOptions o;
        o.preset = "tiny";
        o.out_dir = m_dir = (m_tmp.path() + "/tiny").toStdString();
        o.seed = 5;
        o.dtype = DType::f32;
        model::synth_model(o);
        runtime::cpu::CpuRunner probe(m_dir, 1);
        const int V = probe.config().vocab_size;
        std::vector<int32_t> shared;
        for (int i = 0; i < 37; ++i) shared.push_back((i * 17 + 3) % V);
        const int suffix[] = {0, 5, 16, 23, 1, 40};
        const int max_tokens[] = {24, 9, 36, 15, 30, 18};
        for (int k = 0; k < 6; ++k) {
            Req r;
            r.prompt = shared;
            for (int i = 0; i < suffix[k]; ++i) r.prompt.push_back((k * 31 + i * 7 + 1) % V);
            r.max_tokens = max_tokens[k];
            m_reqs.push_back(r);
        }
    }
    void concurrent_equals_alone_data() {
        QTest::addColumn<int>("n_pages");
        QTest::newRow("roomy") << 64;
        QTest::newRow("tight: preemption") << 10;
    }
    void concurrent_equals_alone() {
        QFETCH(int, n_pages);
        runtime::cpu::CpuRunner runner(m_dir, 2);
        BaseOnlyResidency base;
        std::vector<std::vector<int32_t>> alone;
        for (const Req& r : m_reqs) {
            EngineLoop loop(runner, base, config(runner, 64));
            alone.push_back(run(*loop.submit(request(r))));
            QCOMPARE(int(alone.back().size()), r.max_tokens);
        }
        EngineLoop loop(runner, base, config(runner, n_pages));
        for (int round = 0; round < 2; ++round) {  // the second round starts with a warm prefix cache
            std::vector<std::shared_ptr<RequestChannel>> chans;
            for (const Req& r : m_reqs) chans.push_back(loop.submit(request(r)));
            int cached = 0;
            for (std::size_t i = 0; i < chans.size(); ++i) {
                FinishOut f;
                QCOMPARE(run(*chans[i], &f), alone[i]);
                cached += f.cached_tokens;
            }
            if (n_pages == 64) QVERIFY(cached > 0);  // shared 37-token prefix: two full pages per request
        }
        if (n_pages == 10) QVERIFY(loop.stats().counters.preemptions > 0);
    }
};

QTEST_GUILESS_MAIN(TstSchedCpuE2e)
#include "tst_sched_cpu_e2e.moc"
