// engine/sched pure steps: plan_capacity and plan_tokens against expected tables.
#include <QtTest>

#include "core/error.h"
#include "sched/scheduler_steps.h"

using namespace loradesk;
using namespace loradesk::sched;

namespace {

using Ids = std::vector<int>;

int adapter_id(std::string_view ns) { return ns.empty() ? 0 : ns[0] - 'a' + 1; }  // tests use one-letter names
CapacityCandidate w(int id, std::string_view ns, int pages, uint64_t arrival, int64_t waited = 0, int tokens = 8) {
    return {id, ns, adapter_id(ns), pages, tokens, arrival, waited, 0};
}
CapacityCandidate r(int id, std::string_view ns, int pages, uint64_t arrival, int reclaimable = 0) {
    return {id, ns, adapter_id(ns), pages, 1, arrival, 0, reclaimable};
}

}  // namespace

Q_DECLARE_METATYPE(std::vector<loradesk::sched::CapacityCandidate>)
Q_DECLARE_METATYPE(std::vector<int>)
Q_DECLARE_METATYPE(std::vector<std::string>)

class TstSchedulerSteps : public QObject {
    Q_OBJECT
  private slots:
    void capacity_data() {
        QTest::addColumn<int>("policy");  // 0 fcfs, 1 pack
        QTest::addColumn<int>("max_loras");
        QTest::addColumn<int>("max_running");
        QTest::addColumn<int>("available");
        QTest::addColumn<std::vector<CapacityCandidate>>("running");
        QTest::addColumn<std::vector<CapacityCandidate>>("waiting");
        QTest::addColumn<Ids>("exp_running");
        QTest::addColumn<Ids>("exp_admitted");
        QTest::addColumn<Ids>("exp_preempted");
        QTest::addColumn<Ids>("exp_deferred");
        QTest::addColumn<std::vector<std::string>>("exp_adapters");
        using V = std::vector<CapacityCandidate>;
        using S = std::vector<std::string>;
        QTest::newRow("adapter cap: third adapter waits, base needs no slot")
            << 0 << 2 << 16 << 100 << V{}
            << V{w(0, "a", 1, 0), w(1, "b", 1, 1), w(2, "c", 1, 2), w(3, "a", 1, 3), w(4, "", 1, 4)} << Ids{}
            << Ids{0, 1, 3, 4} << Ids{} << Ids{2} << S{"a", "b"};
        QTest::newRow("running adapters hold their slots")
            << 0 << 2 << 16 << 100 << V{r(0, "a", 0, 0), r(1, "b", 0, 1)} << V{w(5, "c", 1, 2), w(6, "b", 1, 3)}
            << Ids{0, 1} << Ids{6} << Ids{} << Ids{5} << S{"a", "b"};
        QTest::newRow("pages: the one that does not fit is deferred, later small ones go")
            << 0 << 4 << 16 << 7 << V{} << V{w(0, "", 3, 0), w(1, "", 3, 1), w(2, "", 3, 2), w(3, "", 1, 3)} << Ids{}
            << Ids{0, 1, 3} << Ids{} << Ids{2} << S{};
        QTest::newRow("max_running") << 0 << 4 << 2 << 100 << V{r(0, "", 0, 0)} << V{w(1, "", 1, 1), w(2, "", 1, 2)}
                                     << Ids{0} << Ids{1} << Ids{} << Ids{2} << S{};
        QTest::newRow("fcfs order across adapters")
            << 0 << 2 << 16 << 100 << V{r(0, "a", 0, 0)}
            << V{w(1, "b", 1, 1), w(2, "a", 1, 2), w(3, "b", 1, 3), w(4, "c", 1, 4)} << Ids{0} << Ids{1, 2, 3} << Ids{}
            << Ids{4} << S{"a", "b"};
        QTest::newRow("pack: adapters in the step first, then whole groups by age")
            << 1 << 3 << 16 << 100 << V{r(0, "a", 0, 0)}
            << V{w(1, "b", 1, 1), w(2, "c", 1, 2), w(3, "a", 1, 3), w(4, "b", 1, 4), w(5, "d", 1, 5)} << Ids{0}
            << Ids{3, 1, 4, 2} << Ids{} << Ids{5} << S{"a", "b", "c"};
        QTest::newRow("age bound: an aged request blocks newcomers until it fits")
            << 0 << 2 << 16 << 100 << V{r(0, "a", 0, 0), r(1, "b", 0, 1)} << V{w(2, "c", 1, 2, 64), w(3, "a", 1, 3)}
            << Ids{0, 1} << Ids{} << Ids{} << Ids{2, 3} << S{"a", "b"};
        QTest::newRow("age bound: aged requests jump the queue")
            << 1 << 2 << 16 << 100 << V{} << V{w(0, "a", 1, 0, 1), w(1, "a", 1, 1, 1), w(2, "b", 1, 2, 70)} << Ids{}
            << Ids{2, 0, 1} << Ids{} << Ids{} << S{"b", "a"};
        QTest::newRow("out of pages: newest running preempted, nobody admitted")
            << 0 << 4 << 16 << 1 << V{r(0, "", 1, 0, 4), r(2, "", 1, 2, 2), r(1, "", 1, 1, 3)} << V{w(3, "", 1, 3)}
            << Ids{0, 1} << Ids{} << Ids{2} << Ids{3} << S{};
        QTest::newRow("the oldest running sequence is never preempted")
            << 0 << 4 << 16 << 0 << V{r(0, "", 2, 0, 1)} << V{} << Ids{0} << Ids{} << Ids{} << Ids{} << S{};
    }
    void capacity() {
        QFETCH(int, policy);
        QFETCH(int, max_loras);
        QFETCH(int, max_running);
        QFETCH(int, available);
        QFETCH(std::vector<CapacityCandidate>, running);
        QFETCH(std::vector<CapacityCandidate>, waiting);
        CapacityConfig cfg;
        cfg.policy = policy ? Policy::pack : Policy::fcfs;
        cfg.max_loras = max_loras;
        cfg.max_running = max_running;
        cfg.max_wait_steps = 64;
        CapacityPlan p = plan_capacity(cfg, running, waiting, available);
        QTEST(p.running, "exp_running");
        QTEST(p.admitted, "exp_admitted");
        QTEST(p.preempted, "exp_preempted");
        QTEST(p.deferred, "exp_deferred");
        QTEST(p.adapters, "exp_adapters");
    }
    void admission_stops_at_token_budget() {
        CapacityConfig cfg;
        cfg.max_batch_tokens = 100;
        std::vector<CapacityCandidate> waiting{w(0, "", 1, 0, 0, 60), w(1, "", 1, 1, 0, 60), w(2, "", 1, 2, 0, 60)};
        CapacityPlan p = plan_capacity(cfg, {}, waiting, 100);
        QCOMPARE(p.admitted, (Ids{0, 1}));  // the second chunk is admitted (it gets what is left), the third waits
        QCOMPARE(p.deferred, (Ids{2}));
    }
    void tokens_data() {
        QTest::addColumn<int>("budget");
        QTest::addColumn<Ids>("pending");
        QTest::addColumn<Ids>("decode");
        QTest::addColumn<Ids>("expected");
        QTest::newRow("decode first, prefill takes the rest")
            << 50 << Ids{100, 1, 1, 10} << Ids{0, 1, 1, 0} << Ids{48, 1, 1, 0};
        QTest::newRow("prefills in order") << 64 << Ids{30, 30, 30} << Ids{0, 0, 0} << Ids{30, 30, 4};
        QTest::newRow("more decodes than budget") << 2 << Ids{1, 1, 1} << Ids{1, 1, 1} << Ids{1, 1, 0};
        QTest::newRow("recompute prefill after a decode") << 8 << Ids{1, 20} << Ids{1, 0} << Ids{1, 7};
    }
    void tokens() {
        QFETCH(int, budget);
        QFETCH(Ids, pending);
        QFETCH(Ids, decode);
        std::vector<TokenCandidate> c;
        for (std::size_t i = 0; i < pending.size(); ++i) c.push_back({pending[i], decode[i] != 0});
        QTEST(plan_tokens(budget, c), "expected");
    }
    void policy_names() {
        QCOMPARE(parse_policy("pack"), Policy::pack);
        QCOMPARE(std::string(policy_name(parse_policy("fcfs"))), std::string("fcfs"));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, parse_policy("lifo"));
    }
};

QTEST_GUILESS_MAIN(TstSchedulerSteps)
#include "tst_scheduler_steps.moc"
