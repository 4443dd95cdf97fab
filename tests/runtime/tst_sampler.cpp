// engine/runtime: sampler statistics with fixed seeds (frequencies vs softmax), exact support sets of
// top-k / top-p / min-p, per-seed reproducibility, exact penalties and raw logprobs.
#include <QtTest>

#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "runtime/sampler.h"

using namespace loradesk;
using namespace loradesk::runtime;

namespace {

const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 1.5f};  // probs order: 0, 5, 1, 2, 3, 4

std::map<int, int> histogram(SamplingParams p, int n) {
    Sampler s(p, {});
    std::map<int, int> h;
    for (int i = 0; i < n; ++i) ++h[s.sample(kLogits.data(), int(kLogits.size())).token];
    return h;
}

std::set<int> support(const SamplingParams& p) {
    std::set<int> out;
    for (auto& [tok, n] : histogram(p, 4000)) out.insert(tok);
    return out;
}

}  // namespace

class TstSampler : public QObject {
    Q_OBJECT
  private slots:
    void greedy() {
        SamplingParams p;
        p.temperature = 0;
        Sampler s(p, {});
        QCOMPARE(s.sample(kLogits.data(), 6).token, 0);
    }
    void temperature_frequencies() {
        SamplingParams p;
        p.temperature = 0.7f;
        p.seed = 42;
        const int n = 40000;
        auto h = histogram(p, n);
        double z = 0;
        for (float l : kLogits) z += std::exp(l / 0.7);
        for (int t = 0; t < 6; ++t) {
            const double expected = std::exp(kLogits[std::size_t(t)] / 0.7) / z;
            const double got = double(h[t]) / n;
            const double sigma = std::sqrt(expected * (1 - expected) / n);
            QVERIFY2(std::fabs(got - expected) < 5 * sigma + 1e-4,
                     qPrintable(QString("token %1: %2 vs %3").arg(t).arg(got).arg(expected)));
        }
    }
    void supports_data() {
        QTest::addColumn<int>("top_k");
        QTest::addColumn<float>("top_p");
        QTest::addColumn<float>("min_p");
        QTest::addColumn<QList<int>>("expected");
        QTest::newRow("top_k 2") << 2 << 1.0f << 0.0f << QList<int>{0, 5};
        QTest::newRow("top_k 3") << 3 << 1.0f << 0.0f << QList<int>{0, 1, 5};
        // probs: .4197 (0), .2546 (5), .1544 (1), .0937 (2), .0568 (3), .0209 (4); cumulative .420, .674, .829
        QTest::newRow("top_p 0.67") << 0 << 0.67f << 0.0f << QList<int>{0, 5};
        QTest::newRow("top_p 0.68") << 0 << 0.68f << 0.0f << QList<int>{0, 1, 5};
        QTest::newRow("top_p tiny") << 0 << 0.01f << 0.0f << QList<int>{0};
        // min_p 0.3: keep p >= 0.3 * p_max -> exp(l - 2) >= 0.3 -> l >= 0.796
        QTest::newRow("min_p 0.3") << 0 << 1.0f << 0.3f << QList<int>{0, 1, 5};
        QTest::newRow("min_p 0.5") << 0 << 1.0f << 0.5f << QList<int>{0, 5};
        // top-p sees the top-k distribution renormalised: .455, .276 (cumulative .731) -> 0.72 keeps two
        QTest::newRow("k and p") << 4 << 0.72f << 0.0f << QList<int>{0, 5};
    }
    void supports() {
        QFETCH(int, top_k);
        QFETCH(float, top_p);
        QFETCH(float, min_p);
        QFETCH(QList<int>, expected);
        SamplingParams p;
        p.top_k = top_k;
        p.top_p = top_p;
        p.min_p = min_p;
        p.seed = 1;
        std::set<int> want(expected.begin(), expected.end());
        QCOMPARE(support(p), want);
    }
    void reproducible_per_seed() {
        SamplingParams p;
        p.seed = 123;
        std::vector<int> a, b, c;
        Sampler sa(p, {}), sb(p, {});
        p.seed = 124;
        Sampler sc(p, {});
        for (int i = 0; i < 64; ++i) {
            a.push_back(sa.sample(kLogits.data(), 6).token);
            b.push_back(sb.sample(kLogits.data(), 6).token);
            c.push_back(sc.sample(kLogits.data(), 6).token);
        }
        QCOMPARE(a, b);
        QVERIFY(a != c);
    }
    void penalties_exact() {
        SamplingParams p;
        p.repetition_penalty = 2.0f;
        p.presence_penalty = 0.5f;
        p.frequency_penalty = 0.25f;
        p.logit_bias = {{4, 3.0f}};
        Sampler s(p, {1, 3, 1});
        s.accept(0);
        s.accept(0);
        s.accept(3);
        std::vector<float> l = kLogits;
        s.apply_processors(l);
        // 0: output x2 -> 2/2 - 0.5 - 0.5 = 0; 1: prompt -> 1/2; 2: untouched; 3: prompt+output x1 -> 0*2 - 0.75
        // 4: bias only -> 2; 5: untouched
        const std::vector<float> expected = {0.0f, 0.5f, 0.5f, -0.75f, 2.0f, 1.5f};
        for (std::size_t i = 0; i < l.size(); ++i) QCOMPARE(l[i], expected[i]);
        p = {};
        p.repetition_penalty = 1.5f;
        std::vector<float> neg = {-3.0f, 3.0f};
        Sampler s2(p, {0, 1});
        s2.apply_processors(neg);
        QCOMPARE(neg[0], -4.5f);
        QCOMPARE(neg[1], 2.0f);
    }
    void raw_logprobs() {
        SamplingParams p;
        p.temperature = 0;
        p.top_logprobs = 2;
        p.repetition_penalty = 10.0f;  // processing changes the choice, not the reported logprobs
        Sampler s(p, {0});
        SampleResult r = s.sample(kLogits.data(), 6);
        double z = 0;
        for (float l : kLogits) z += std::exp(double(l));
        QCOMPARE(r.token, 5);
        QVERIFY(std::fabs(r.logprob - float(1.5 - std::log(z))) < 1e-5f);
        QCOMPARE(r.top.size(), std::size_t(2));
        QCOMPARE(r.top[0].token, 0);
        QCOMPARE(r.top[1].token, 5);
        QVERIFY(std::fabs(r.top[0].logprob - float(2.0 - std::log(z))) < 1e-5f);
    }
    void validation() {
        SamplingParams p;
        p.top_p = 0;
        QVERIFY_THROWS_EXCEPTION(Error, p.validate(10));
        p = {};
        p.temperature = -1;
        QVERIFY_THROWS_EXCEPTION(Error, p.validate(10));
        p = {};
        p.logit_bias = {{10, 1.0f}};
        QVERIFY_THROWS_EXCEPTION(Error, p.validate(10));
        p = {};
        p.presence_penalty = 3;
        QVERIFY_THROWS_EXCEPTION(Error, p.validate(10));
        p = {};
        p.validate(10);
    }
};

QTEST_GUILESS_MAIN(TstSampler)
#include "tst_sampler.moc"
