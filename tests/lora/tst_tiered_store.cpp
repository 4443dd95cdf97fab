// engine/lora TieredStore as deterministic simulations: each row is a list of steps, each step an
// operation with the expected grants, host LRU order and slot contents right after it. Synchronous
// mode (io_threads 0) makes disk reads inline; a separate test covers the asynchronous pool.
#include <QtTest>
#include <future>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "lora/tiered_store.h"
#include "recording_runner.h"

using namespace loradesk;
using namespace loradesk::lora;
using namespace loradesk::lora::testing;

namespace {

// Adapters of the simulation: one letter each; size in KiB from the table, "X*" always fail to load.
runtime::LoraWeights fake_weights(const std::string& digest, int kib, int rank = 4) {
    runtime::LoraWeights w;
    w.layers.resize(1);
    auto& q = w.layers[0][0];
    q.rank = rank;
    q.scale = float(digest[0]);  // the marker RecordingRunner reports per slot
    q.a.assign(std::size_t(kib) * 256, 0.5f);
    return w;
}

int size_kib(const std::string& d) { return d[0] == 'D' ? 12 : 4; }  // D is the big one

QStringList split(const QString& s) { return s.split(' ', Qt::SkipEmptyParts); }

QString describe_grants(const std::vector<std::string>& ds, const std::vector<SlotGrant>& gs) {
    QStringList out;
    for (std::size_t i = 0; i < ds.size(); ++i) {
        QString d = QString::fromStdString(ds[i]);
        switch (gs[i].state) {
            case Residency::ready:
                out << d + "@" + QString::number(gs[i].slot);
                break;
            case Residency::loading:
                out << d + ":loading";
                break;
            case Residency::failed:
                out << d + ":failed";
                break;
        }
    }
    return out.join(' ');
}

QString join(const std::vector<std::string>& v, bool skip_first) {
    QStringList out;
    for (std::size_t i = skip_first ? 1 : 0; i < v.size(); ++i)
        out << (v[i].empty() ? "-" : QString::fromStdString(v[i]));
    return out.join(' ');
}

// A runner with an upload-ready form: prepare_lora records the thread it ran on and wraps the marker scale;
// load_prepared_lora_slot records which prepared object reached which slot. Preparing adapters whose
// marker is 'F' throws (the store must fall back to the f32 path).
struct FakePrepared final : runtime::PreparedLora {
    int marker = 0;
    std::size_t m_bytes = 0;
    std::size_t bytes() const override { return m_bytes; }
};

class PreparingRunner final : public runtime::ModelRunner {
  public:
    model::ModelConfig m_config;
    mutable std::mutex mutex;
    mutable std::vector<std::thread::id> prepare_threads;
    std::vector<std::string> events;                   // "prepared 1 <- A", "f32 2 <- F"
    std::vector<const runtime::PreparedLora*> loaded;  // per prepared load: the object handed over

    const model::ModelConfig& config() const override { return m_config; }
    std::string device_name() const override { return "preparing"; }
    runtime::MemoryReport memory() const override { return {}; }
    std::size_t kv_page_bytes(int) const override { return 0; }
    void allocate_kv(int, int) override {}
    void configure_lora_slots(int, int) override {}
    std::shared_ptr<const runtime::PreparedLora> prepare_lora(const runtime::LoraWeights& w) const override {
        {
            std::lock_guard lock(mutex);
            prepare_threads.push_back(std::this_thread::get_id());
        }
        const int marker = int(w.layers.at(0)[0].scale);
        if (marker == 'F') throw Error(ErrorCode::unavailable, "cudaHostAlloc failed");
        auto p = std::make_shared<FakePrepared>();
        p->marker = marker;
        p->m_bytes = 100 + w.bytes() / 2;  // bf16 of the f32 values, and a table
        return p;
    }
    void load_lora_slot(int slot, const runtime::LoraWeights& w) override {
        events.push_back("f32 " + std::to_string(slot) + " <- " + char(int(w.layers.at(0)[0].scale)));
    }
    void load_prepared_lora_slot(int slot, std::shared_ptr<const runtime::PreparedLora> p) override {
        auto* fake = dynamic_cast<const FakePrepared*>(p.get());
        if (!fake) throw Error(ErrorCode::internal, "foreign prepared form");
        loaded.push_back(p.get());
        events.push_back("prepared " + std::to_string(slot) + " <- " + char(fake->marker));
    }
    void clear_lora_slot(int slot) override { events.push_back("clear " + std::to_string(slot)); }
    void forward(const runtime::ForwardBatch&, std::vector<float>&) override {}
};

}  // namespace

class TstTieredStore : public QObject {
    Q_OBJECT
  private slots:
    void simulate_data() {
        QTest::addColumn<int>("n_slots");
        QTest::addColumn<int>("cpu");
        QTest::addColumn<int>("budget_kib");
        QTest::addColumn<QStringList>("steps");  // "op args | grants | host LRU | slots"
        QTest::addColumn<QString>("disk_reads");
        QTest::newRow("device LRU") << 2 << 4 << 1024 << QStringList{
            "acquire A   | A@1     | A     | A -",
            "acquire B   | B@2     | A B   | A B",
            "acquire C   | C@1     | A B C | C B",
            "acquire B   | B@2     | A C B | C B",
            "acquire A   | A@1     | C B A | A B",
            "acquire A B | A@1 B@2 | C A B | A B",
        } << "A B C";
        QTest::newRow("one step never evicts its own adapters") << 2 << 4 << 1024 << QStringList{
            "acquire A B | A@1 B@2 | A B   | A B",
            "acquire C A | C@2 A@1 | B A C | A C",
        } << "A B C";
        QTest::newRow("pinned stays on device") << 2 << 4 << 1024 << QStringList{
            "pin A       |         | A     | - -",
            "acquire A   | A@1     | A     | A -",
            "acquire B   | B@2     | A B   | A B",
            "acquire C   | C@2     | A B C | A C",
            "unpin A     |         | A B C | A C",
            "acquire B   | B@1     | A C B | B C",
        } << "A B C";
        QTest::newRow("all slots pinned") << 1 << 4 << 1024 << QStringList{
            "pin A       |          | A   | -",
            "acquire A   | A@1      | A   | A",
            "acquire B   | B:failed | A B | A",
        } << "A B";
        // A pinned adapter off the step holds one slot, the step's own adapters the rest: the newcomer waits for
        // a later step (it failed its requests with "all slots hold pinned adapters").
        QTest::newRow("pinned plus busy slots wait") << 2 << 4 << 1024 << QStringList{
            "pin A       |                  | A     | - -",
            "acquire A   | A@1              | A     | A -",
            "acquire B C | B@2 C:loading    | A B C | A B",
            "acquire C   | C@2              | A B C | A C",
        } << "A B C";
        QTest::newRow("host count limit") << 1 << 2 << 1024 << QStringList{
            "prefetch A  |     | A   | -",
            "prefetch B  |     | A B | -",
            "prefetch C  |     | B C | -",
            "prefetch B  |     | C B | -",
            "acquire A   | A@1 | B A | A",
        } << "A B C A";
        QTest::newRow("host evicts off-device first") << 1 << 2 << 1024 << QStringList{
            "acquire A   | A@1 | A   | A",
            "prefetch B  |     | A B | A",
            "prefetch C  |     | A C | A",
            "acquire C   | C@1 | A C | C",
            "prefetch B  |     | C B | C",
        } << "A B C B";
        QTest::newRow("byte budget") << 1 << 8 << 10 << QStringList{
            "prefetch A  |          | A   | -",
            "prefetch B  |          | A B | -",
            "prefetch C  |          | B C | -",
            "acquire D   | D:failed | B C | -",
            "acquire B   | B@1      | C B | B",
        } << "A B C D";
        QTest::newRow("pinned exempt from host eviction") << 1 << 2 << 1024 << QStringList{
            "pin A       |     | A   | -",
            "prefetch B  |     | A B | -",
            "prefetch C  |     | A C | -",
            "prefetch E  |     | A E | -",
        } << "A B C E";
        QTest::newRow("pinned fill the host budget") << 1 << 2 << 1024 << QStringList{
            "pin A       |          | A   | -",
            "pin B       |          | A B | -",
            "acquire C   | C:failed | A B | -",
        } << "A B C";
        QTest::newRow("failed loads are reported and retried") << 2 << 4 << 1024 << QStringList{
            "acquire X   | X:failed     |   | - -",
            "acquire A X | A@1 X:failed | A | A -",
            "acquire X   | X:failed     | A | A -",
        } << "X A X X";
        QTest::newRow("unload during use: forget after the last request") << 2 << 4 << 1024 << QStringList{
            "acquire A B | A@1 B@2 | A B | A B",
            "forget A    |         | B   | A B",
            "acquire C   | C@1     | B C | C B",
            "acquire A   | A@2     | B C A | C A",
        } << "A B C A";
        QTest::newRow("reload with new content is a new digest") << 1 << 4 << 1024 << QStringList{
            "acquire A   | A@1 | A   | A",
            "forget A    |     |     | A",
            "acquire a   | a@1 | a   | a",
        } << "A a";
        QTest::newRow("device copy failure") << 1 << 4 << 1024 << QStringList{
            "acquire A   | A@1      | A   | A",
            "devfail     |          | A   | A",
            "acquire B   | B:failed | A B | -",
            "acquire B   | B@1      | A B | B",
        } << "A B";
    }
    void simulate() {
        QFETCH(int, n_slots);
        QFETCH(int, cpu);
        QFETCH(int, budget_kib);
        QFETCH(QStringList, steps);
        QFETCH(QString, disk_reads);
        RecordingRunner runner;
        QStringList reads;
        auto load = [&](const std::string& d, runtime::LoraWeights*) {
            reads << QString::fromStdString(d);
            if (d[0] == 'X') throw ExpectedError(ErrorCode::corrupt_file, "adapter_model.safetensors is truncated");
            return fake_weights(d, size_kib(d));
        };
        TieredStore store(runner, load, {n_slots, 16, cpu, std::size_t(budget_kib) * 1024, 0});
        for (const QString& step : steps) {
            QStringList parts = step.split('|');
            QCOMPARE(parts.size(), 4);
            QStringList op = split(parts[0]);
            std::vector<std::string> args;
            for (int i = 1; i < op.size(); ++i) args.push_back(op[i].toStdString());
            QString grants;
            if (op[0] == "acquire")
                grants = describe_grants(args, store.acquire_slots(args));
            else if (op[0] == "prefetch")
                store.prefetch(args.at(0));
            else if (op[0] == "pin")
                store.set_pinned(args.at(0), true);
            else if (op[0] == "unpin")
                store.set_pinned(args.at(0), false);
            else if (op[0] == "forget")
                store.forget(args.at(0));
            else if (op[0] == "devfail")
                runner.fail_next_load = true;
            else
                QFAIL(qPrintable("unknown op " + op[0]));
            QCOMPARE(grants + " | " + join(store.host_lru(), false) + " | " + join(store.slot_contents(), true),
                     parts[1].simplified() + " | " + parts[2].simplified() + " | " + parts[3].simplified());
            // The runner holds exactly what the store says it holds.
            auto s = store.slot_contents();
            for (std::size_t i = 1; i < s.size(); ++i)
                QCOMPARE(runner.slot_marker[i], s[i].empty() ? -1 : int(s[i][0]));
        }
        QCOMPARE(reads.join(' '), disk_reads);
    }

    void failure_message_reaches_the_grant() {
        RecordingRunner runner;
        TieredStore store(runner,
                          [](const std::string&, runtime::LoraWeights*) -> runtime::LoraWeights {
                              throw ExpectedError(ErrorCode::unsupported, "adapter 'x': use_dora is true");
                          },
                          {2, 16, 4, 1 << 20, 0});
        auto g = store.acquire_slots({"x"});
        QCOMPARE(g[0].state, Residency::failed);
        QCOMPARE(g[0].error, std::string("adapter 'x': use_dora is true"));
        QCOMPARE(g[0].error_code, ErrorCode::unsupported);  // the request's error keeps its kind (400, not 500)
        // Rank above the slots' rank fails instead of reaching the device.
        TieredStore small(runner, [](const std::string& d, runtime::LoraWeights*) { return fake_weights(d, 1, 32); },
                          {1, 16, 4, 1 << 20, 0});
        g = small.acquire_slots({"r"});
        QCOMPARE(g[0].state, Residency::failed);
        QVERIFY2(QString::fromStdString(g[0].error).contains("exceeds --max-lora-rank 16"), g[0].error.c_str());
    }

    // An adapter evicted from the host tier hands its buffers to the next disk read (one kept at most),
    // and only once nothing holds it any more.
    void evicted_weights_are_recycled() {
        RecordingRunner runner;
        std::vector<float> reused;  // per read: the scale marker of the weights offered, 0 for none
        auto load = [&](const std::string& d, runtime::LoraWeights* reuse) {
            reused.push_back(reuse && !reuse->layers.empty() ? reuse->layers[0][0].scale : 0.0f);
            return fake_weights(d, 1);
        };
        TieredStore store(runner, load, {1, 16, 1, 1 << 20, 0});
        store.prefetch("A");
        store.prefetch("B");  // evicts A after B's read
        store.prefetch("C");  // reads into A's buffers, then evicts B
        QCOMPARE(store.host_lru(), std::vector<std::string>{"C"});
        auto g = store.acquire_slots({"D"});  // reads into B's buffers
        QCOMPARE(g[0].state, Residency::ready);
        QCOMPARE(reused, (std::vector<float>{0.0f, 0.0f, float('A'), float('B')}));
    }

    void bad_calls_and_options() {
        RecordingRunner runner;
        auto load = [](const std::string& d, runtime::LoraWeights*) { return fake_weights(d, 1); };
        QVERIFY_THROWS_EXCEPTION(ExpectedError, TieredStore(runner, load, {0, 16, 4, 1 << 20, 0}));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, TieredStore(runner, load, {4, 16, 2, 1 << 20, 0}));
        TieredStore store(runner, load, {2, 16, 4, 1 << 20, 0});
        QVERIFY_THROWS_EXCEPTION(Error, store.acquire_slots({"A", "B", "C"}));
        QVERIFY_THROWS_EXCEPTION(Error, store.acquire_slots({"A", "A"}));
    }

    // The loader thread prepares (never the loop thread), the host tier keeps only the prepared form and
    // counts its bytes, and the very object prepared reaches load_prepared_lora_slot.
    void prepares_on_the_loader_thread() {
        PreparingRunner runner;
        auto load = [](const std::string& d, runtime::LoraWeights*) { return fake_weights(d, 4); };
        TieredStore store(runner, load, {2, 16, 4, 1 << 20, 2});
        store.prefetch("A");
        QTRY_COMPARE(store.host_state("A"), TieredStore::HostState::ready);
        auto prepared = store.host_prepared("A");
        QVERIFY(prepared);
        QCOMPARE(store.host_bytes(), prepared->bytes());
        QCOMPARE(store.host_bytes(), std::size_t(100) + fake_weights("A", 4).bytes() / 2);
        auto g = store.acquire_slots({"A"});
        QCOMPARE(g[0].state, Residency::ready);
        QCOMPARE(runner.events, std::vector<std::string>{"prepared 1 <- A"});
        QCOMPARE(runner.loaded, std::vector<const runtime::PreparedLora*>{prepared.get()});
        std::lock_guard lock(runner.mutex);
        QCOMPARE(runner.prepare_threads.size(), std::size_t(1));
        QVERIFY(runner.prepare_threads[0] != std::this_thread::get_id());
    }

    // A preparation that throws leaves the f32 copy in the host tier and the slot loads it the old way;
    // the f32 bytes are what counts then. A runner that prepares nothing (the CPU runner) is the same path.
    void failed_preparation_falls_back_to_f32() {
        PreparingRunner runner;
        auto load = [](const std::string& d, runtime::LoraWeights*) { return fake_weights(d, 4); };
        TieredStore store(runner, load, {2, 16, 4, 1 << 20, 0});
        auto g = store.acquire_slots({"F", "A"});
        QCOMPARE(g[0].state, Residency::ready);
        QCOMPARE(g[1].state, Residency::ready);
        QCOMPARE(runner.events, (std::vector<std::string>{"f32 1 <- F", "prepared 2 <- A"}));
        QVERIFY(!store.host_prepared("F"));
        QCOMPARE(store.host_bytes(), fake_weights("F", 4).bytes() + store.host_prepared("A")->bytes());
        // Synchronous mode prepares inline, on the caller's thread.
        std::lock_guard lock(runner.mutex);
        QCOMPARE(runner.prepare_threads, (std::vector<std::thread::id>(2, std::this_thread::get_id())));
    }

    void asynchronous_prefetch() {
        RecordingRunner runner;
        std::promise<void> gate;
        std::shared_future<void> open = gate.get_future().share();
        std::atomic<int> reads{0};
        auto load = [&](const std::string& d, runtime::LoraWeights*) {
            open.wait();
            reads++;
            return fake_weights(d, 1);
        };
        TieredStore store(runner, load, {2, 16, 4, 1 << 20, 2});
        store.prefetch("A");
        store.prefetch("A");  // idempotent
        store.prefetch("B");
        QCOMPARE(store.host_state("A"), TieredStore::HostState::loading);
        auto g = store.acquire_slots({"A"});
        QCOMPARE(g[0].state, Residency::loading);  // non-blocking while the read runs
        store.forget("B");                         // B's read finishes after it was forgotten
        gate.set_value();
        QTRY_COMPARE(store.host_state("A"), TieredStore::HostState::ready);
        QTRY_COMPARE(reads.load(), 2);
        QCOMPARE(store.host_state("B"), TieredStore::HostState::absent);
        g = store.acquire_slots({"A"});
        QCOMPARE(g[0].state, Residency::ready);
        QCOMPARE(g[0].slot, 1);
    }
};

QTEST_GUILESS_MAIN(TstTieredStore)
#include "tst_tiered_store.moc"
