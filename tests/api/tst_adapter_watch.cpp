// engine/api adapter folder watch: folders dropped into, changed in or removed from an --adapters root
// while the engine runs are served, re-registered under a new digest, or unloaded (with and without a
// catalog), on explicit polls and on the background thread.
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "engine_test_util.h"

using namespace loradesk;
namespace fs = std::filesystem;

using test::listed;
using test::run_request;
using test::touch_forward;

class TstAdapterWatch : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_model;
    model::ModelConfig m_config;
    std::string m_roots;  // per test: a fresh adapters root
    int m_case = 0;

    void synth(const fs::path& dir, uint64_t seed) { test::synth_adapter(m_config, dir, seed); }

    std::unique_ptr<api::Engine> make_engine(bool with_catalog, int interval_ms,
                                             std::vector<std::pair<std::string, std::string>> named = {}) {
        api::EngineOptions o = test::cpu_options(m_model, {m_roots});
        o.named_adapters = std::move(named);
        o.adapter_watch_interval_ms = interval_ms;
        if (with_catalog)
            o.data_dir = (fs::path(m_tmp.path().toStdString()) / ("data" + std::to_string(m_case))).string();
        return test::start_engine(o);  // folders read at start-up, as the watch tests expect
    }

    static api::AdapterFolderWatch::PollReport poll(api::Engine& e) { return test::impl(e).poll_adapter_folders_now(); }

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        m_model = (fs::path(m_tmp.path().toStdString()) / "tiny-base").string();
        m_config = test::synth_tiny_model(m_model);
    }

    void init() {
        m_roots = (fs::path(m_tmp.path().toStdString()) / ("adapters" + std::to_string(++m_case))).string();
        fs::create_directories(m_roots);
    }

    void lifecycle_data() {
        QTest::addColumn<bool>("with_catalog");
        QTest::newRow("no catalog") << false;
        QTest::newRow("catalog") << true;
    }
    void lifecycle() {
        QFETCH(bool, with_catalog);
        synth(fs::path(m_roots) / "early", 1);
        auto engine = make_engine(with_catalog, 0);
        QVERIFY(listed(*engine, "early"));
        auto first = poll(*engine);  // startup registered "early": the first poll must not do it again
        QVERIFY(first.added.empty() && first.changed.empty() && first.removed.empty());

        // Appears: served, and requests routed to it run with its digest.
        const fs::path dir = fs::path(m_roots) / "late";
        synth(dir, 2);
        QCOMPARE(run_request(*engine, "late").status().code, ErrorCode::not_found);
        auto added = poll(*engine);
        QCOMPARE(added.added, std::vector<std::string>{"late"});
        auto info = listed(*engine, "late");
        QVERIFY(info && info->compatible);
        auto ran = run_request(*engine, "late");
        QVERIFY2(ran.ok(), ran.status().message.c_str());
        QCOMPARE(ran.value(), info->digest);
        QVERIFY(poll(*engine).added.empty());  // unchanged: left alone

        // Changes: a new digest under the same name; requests use the new content.
        synth(dir, 3);
        touch_forward(dir, 5);
        auto changed = poll(*engine);
        QCOMPARE(changed.changed, std::vector<std::string>{"late"});
        auto info2 = listed(*engine, "late");
        QVERIFY(info2);
        QVERIFY(info2->digest != info->digest);
        ran = run_request(*engine, "late");
        QVERIFY2(ran.ok(), ran.status().message.c_str());
        QCOMPARE(ran.value(), info2->digest);

        // Vanishes: unlisted, requests get not_found; the other adapter is untouched.
        fs::remove_all(dir);
        auto removed = poll(*engine);
        QCOMPARE(removed.removed, std::vector<std::string>{"late"});
        QVERIFY(!listed(*engine, "late"));
        QCOMPARE(run_request(*engine, "late").status().code, ErrorCode::not_found);
        QVERIFY(run_request(*engine, "early").ok());
        if (with_catalog) {
            auto details = engine->adapter_details("late");
            QVERIFY2(details.ok(), details.status().message.c_str());
            bool missing_event = false;
            for (auto& e : details.value().recent_events) missing_event |= e.find(" missing") != std::string::npos;
            QVERIFY(missing_event);
        }

        // Comes back: served again.
        synth(dir, 3);
        QCOMPARE(poll(*engine).added, std::vector<std::string>{"late"});
        QCOMPARE(listed(*engine, "late")->digest, info2->digest);
        engine->shutdown();
        QVERIFY(poll(*engine).added.empty());  // shut down: no more polls
    }

    void running_request_outlives_removal() {
        auto engine = make_engine(false, 0);
        const fs::path dir = fs::path(m_roots) / "busy";
        synth(dir, 4);
        QCOMPARE(poll(*engine).added, std::vector<std::string>{"busy"});
        auto submitted = engine->submit(test::greedy_request("busy", {5, 6, 7}, 24));
        QVERIFY(submitted.ok());
        // Adapters are read from disk lazily: the folder may go once the request has its first token
        // (the weights are then in memory and the request holds them).
        int tokens = 0;
        bool finished = false;
        for (int i = 0; i < 600 && tokens == 0; ++i) {
            auto ev = submitted.value()->next(std::chrono::milliseconds(100));
            if (!ev) continue;
            QVERIFY(std::holds_alternative<api::TokenEvent>(*ev));
            tokens += int(std::get<api::TokenEvent>(*ev).token_ids.size());
        }
        QVERIFY(tokens > 0);
        fs::remove_all(dir);
        QCOMPARE(poll(*engine).removed, std::vector<std::string>{"busy"});
        for (int i = 0; i < 600 && !finished; ++i) {
            auto ev = submitted.value()->next(std::chrono::milliseconds(100));
            if (!ev) continue;
            QVERIFY2(!std::holds_alternative<api::ErrorEvent>(*ev),
                     "a running request failed after its folder vanished");
            if (auto* t = std::get_if<api::TokenEvent>(&*ev)) tokens += int(t->token_ids.size());
            if (std::holds_alternative<api::FinishEvent>(*ev)) finished = true;
        }
        QVERIFY(finished);
        QCOMPARE(tokens, 24);
        QCOMPARE(run_request(*engine, "busy").status().code, ErrorCode::not_found);
    }

    void incompatible_folder_is_listed_with_reason() {
        auto engine = make_engine(false, 0);
        model::ModelConfig bigger = m_config;
        bigger.n_layers += 2;
        lora::SynthAdapterSpec spec;
        spec.rank = 4;
        spec.layers = {bigger.n_layers - 1};
        const fs::path dir = fs::path(m_roots) / "other-base";
        lora::synthesize_adapter(bigger, spec, dir.string());
        auto report = poll(*engine);
        QCOMPARE(report.failed.size(), std::size_t(1));
        auto info = listed(*engine, "other-base");
        QVERIFY(info);
        QVERIFY(!info->compatible);
        QVERIFY2(!info->incompatibility.empty(), "the reason is shown");
        QVERIFY(poll(*engine).failed.empty());  // not retried until the folder changes
        fs::remove_all(dir);
        QCOMPARE(poll(*engine).removed, std::vector<std::string>{"other-base"});
        QVERIFY(!listed(*engine, "other-base"));
    }

    void name_served_elsewhere_is_kept() {
        const fs::path elsewhere = fs::path(m_tmp.path().toStdString()) / ("named" + std::to_string(m_case)) / "dup";
        synth(elsewhere, 5);
        auto engine = make_engine(false, 0, {{"dup", elsewhere.string()}});
        const std::string digest = listed(*engine, "dup")->digest;
        synth(fs::path(m_roots) / "dup", 6);
        QVERIFY(poll(*engine).added.empty());
        QCOMPARE(listed(*engine, "dup")->digest, digest);  // the dropped-in folder did not take the name
        QVERIFY(engine->unload_adapter("dup").ok());
        QCOMPARE(poll(*engine).added, std::vector<std::string>{"dup"});  // the name is free now
        QVERIFY(listed(*engine, "dup")->digest != digest);
    }

    void background_poll() {
        auto engine = make_engine(false, 50);
        synth(fs::path(m_roots) / "bg", 7);
        QTRY_VERIFY_WITH_TIMEOUT(listed(*engine, "bg").has_value(), 10000);
        QVERIFY(run_request(*engine, "bg").ok());
        fs::remove_all(fs::path(m_roots) / "bg");
        QTRY_VERIFY_WITH_TIMEOUT(!listed(*engine, "bg").has_value(), 10000);
        engine->shutdown();  // stops the poll thread
        synth(fs::path(m_roots) / "after", 8);
        QTest::qWait(300);
        QVERIFY(!listed(*engine, "after"));
    }

    // A FIFO named like an adapter file blocked the poll (and a load request) forever: opening one for reading
    // waits for a writer. Both are refused at once now, and the watch goes on with the other folders.
    void fifo_adapter_files_are_refused_without_blocking_data() {
        QTest::addColumn<QString>("file");
        QTest::newRow("weights") << "adapter_model.safetensors";
        QTest::newRow("config") << "adapter_config.json";
    }
    void fifo_adapter_files_are_refused_without_blocking() {
        QFETCH(QString, file);
        auto engine = make_engine(false, 0);
        const fs::path fifo_dir = fs::path(m_roots) / "fifo";
        synth(fifo_dir, 10);
        fs::remove(fifo_dir / file.toStdString());
        QCOMPARE(::mkfifo((fifo_dir / file.toStdString()).c_str(), 0600), 0);
        synth(fs::path(m_roots) / "plain", 11);
        QElapsedTimer t;
        t.start();
        auto report = poll(*engine);
        QVERIFY2(t.elapsed() < 5000, "the poll did not block on the FIFO");
        QCOMPARE(report.added, std::vector<std::string>{"plain"});
        QVERIFY(run_request(*engine, "plain").ok());
        const Status load = engine->load_adapter("fifo2", fifo_dir.string());
        QVERIFY(!load.ok());
        QVERIFY2(load.message.find("not a regular file") != std::string::npos, load.message.c_str());
    }

    // Rewriting an adapter's weights in place (truncate, then write) while the engine reads them killed the process
    // with SIGBUS when the file was mapped. Adapters are read into memory now: every read either succeeds or fails
    // cleanly, and once the writer stops the folder serves its final weights.
    void in_place_rewrites_during_reads_never_crash() {
        const fs::path dir = fs::path(m_roots) / "churn";
        synth(dir, 12);
        const fs::path weights = dir / "adapter_model.safetensors";
        std::string bytes;
        {
            std::ifstream in(weights, std::ios::binary);
            bytes.assign(std::istreambuf_iterator<char>(in), {});
        }
        auto engine = make_engine(false, 0);
        std::atomic<bool> stop{false};
        std::thread writer([&] {
            while (!stop) {
                std::ofstream out(weights, std::ios::binary | std::ios::trunc);  // same inode, shrinks to 0 first
                out.write(bytes.data(), std::streamsize(bytes.size() / 2));
                out.flush();
                out.write(bytes.data() + bytes.size() / 2, std::streamsize(bytes.size() - bytes.size() / 2));
            }
        });
        int loaded = 0, refused = 0;
        std::set<std::string> reasons;
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 1500) {
            const Status s = engine->load_adapter("churn" + std::to_string(loaded + refused), dir.string());
            (s.ok() ? loaded : refused)++;
            if (!s.ok()) reasons.insert(s.message.substr(0, 60));
            if (s.ok()) QVERIFY(engine->unload_adapter("churn" + std::to_string(loaded + refused - 1)).ok());
        }
        stop = true;
        writer.join();
        qInfo("%d loads succeeded, %d were refused while the file was rewritten", loaded, refused);
        for (auto& r : reasons) qInfo("refused: %s", r.c_str());
        QVERIFY2(loaded + refused > 5, "loads kept running while the file was rewritten");
        QVERIFY(engine->load_adapter("settled", dir.string()).ok());
        QVERIFY(run_request(*engine, "settled").ok());
    }

    // A request for an adapter whose files were rewritten since they were registered (and before the watch saw
    // it) is told to retry (unavailable: 503 with Retry-After), not given an internal error; the next poll
    // serves the new content.
    void rewritten_before_the_watch_saw_it_is_retryable() {
        const fs::path dir = fs::path(m_roots) / "moving";
        synth(dir, 13);
        auto engine = make_engine(false, 0);
        synth(dir, 14);
        touch_forward(dir, 5);
        const auto r = run_request(*engine, "moving");
        QVERIFY(!r.ok());
        QCOMPARE(r.status().code, ErrorCode::unavailable);
        QVERIFY2(r.status().message.find("retry shortly") != std::string::npos, r.status().message.c_str());
        poll(*engine);
        QVERIFY(run_request(*engine, "moving").ok());
    }

    void interval_zero_starts_no_thread() {
        auto engine = make_engine(false, 0);
        synth(fs::path(m_roots) / "manual", 9);
        QTest::qWait(300);
        QVERIFY(!listed(*engine, "manual"));
        QCOMPARE(poll(*engine).added, std::vector<std::string>{"manual"});
    }
};

QTEST_GUILESS_MAIN(TstAdapterWatch)
#include "tst_adapter_watch.moc"
