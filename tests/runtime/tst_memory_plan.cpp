// runtime::plan_device_memory: KV pages and adapter slots from device memory (the 80 GB H100 with an 8B
// model, a 24 GB card, overrides) and the refusals, each naming the option to change.
#include <QtTest>

#include "core/error.h"
#include "runtime/memory_plan.h"

using namespace loradesk;
using namespace loradesk::runtime;

namespace {

constexpr std::size_t GiB = std::size_t(1) << 30;

MemoryPlanInput h100_8b() {
    MemoryPlanInput in;
    in.device_total = 80 * GiB;
    in.device_free = 80 * GiB - 16 * GiB;  // 15.3 GiB of bf16 weights + workspace
    in.utilization = 0.9;
    in.reserve_bytes = 1 * GiB;
    in.kv_page_bytes = 36 * 2 * 16 * 1024 * 2;  // Qwen3-8B: 36 layers, K and V, 16 tokens, 1024 kv dims, bf16
    in.page_size = 16;
    in.slot_bytes = 333 * (std::size_t(1) << 20);  // rank 64, every module
    in.max_context = 40960;
    return in;
}

QString refusal(const MemoryPlanInput& in) {
    try {
        plan_device_memory(in);
    } catch (const ExpectedError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class TstMemoryPlan : public QObject {
    Q_OBJECT
  private slots:
    void plans_kv_from_what_is_free() {
        const MemoryPlan p = plan_device_memory(h100_8b());
        // 72 GiB allowed - 16 in use - 1 reserve = 55 GiB; 8 slots take 2.6 GiB; the rest is KV.
        QCOMPARE(p.max_loras, 8);
        const double kv_gib = double(p.kv_bytes) / GiB;
        QVERIFY2(kv_gib > 52.0 && kv_gib < 52.5, qPrintable(QString::number(kv_gib)));
        QCOMPARE(p.kv_bytes, std::size_t(p.kv_pages) * h100_8b().kv_page_bytes);
        QCOMPARE(p.kv_tokens, std::size_t(p.kv_pages) * 16);
        QVERIFY(p.summary.find("8 adapter slots") != std::string::npos);
    }
    void overrides_are_kept() {
        MemoryPlanInput in = h100_8b();
        in.kv_memory_gb = 16;
        in.max_loras = 32;
        const MemoryPlan p = plan_device_memory(in);
        QCOMPARE(p.max_loras, 32);
        QCOMPARE(p.kv_pages, int(16 * GiB / in.kv_page_bytes));
    }
    void default_slots_shrink_on_a_small_card() {
        MemoryPlanInput in = h100_8b();
        in.device_total = 24 * GiB;
        in.device_free = 24 * GiB - 17 * GiB;
        // 21.6 allowed - 17 - 1 = 3.6 GiB: a quarter of it holds 2 slots of 333 MiB.
        const MemoryPlan p = plan_device_memory(in);
        QCOMPARE(p.max_loras, 2);
        QVERIFY(p.summary.find("less than one 40960-token context") != std::string::npos);
    }
    void refusals_name_the_number_to_change_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("names");
        QTest::newRow("weights exceed utilization") << 0 << "--gpu-memory-utilization";
        QTest::newRow("kv too large") << 1 << "--kv-memory";
        QTest::newRow("slots too many") << 2 << "--max-loras";
        QTest::newRow("bad utilization") << 3 << "--gpu-memory-utilization";
    }
    void refusals_name_the_number_to_change() {
        QFETCH(int, which);
        QFETCH(QString, names);
        MemoryPlanInput in = h100_8b();
        if (which == 0) in.device_free = 4 * GiB;
        if (which == 1) in.kv_memory_gb = 60;
        if (which == 2) in.max_loras = 400;
        if (which == 3) in.utilization = 1.5;
        const QString msg = refusal(in);
        QVERIFY2(msg.contains(names), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TstMemoryPlan)
#include "tst_memory_plan.moc"
