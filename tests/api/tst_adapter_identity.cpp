// engine/api adapter identity: names are checked, a taken name is a conflict (never silently re-pointed),
// unloading a busy adapter lets its requests finish, every name keeps its own folder (copies with equal
// content, then one changed), registration times are real, failed folders are listed once however
// often they fail, and symlinks out of --adapters are refused at startup and by the watch.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "engine_test_util.h"

using namespace loradesk;
namespace fs = std::filesystem;
using test::count_listed;
using test::listed;
using test::run_request;

class TstAdapterIdentity : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_model;
    model::ModelConfig m_config;
    fs::path m_root;  // per test: a fresh adapters root
    int m_case = 0;

    fs::path tmp() const { return fs::path(m_tmp.path().toStdString()); }

    std::unique_ptr<api::Engine> make_engine(bool with_catalog = false) {
        api::EngineOptions o = test::cpu_options(m_model, {m_root.string()});
        if (with_catalog) o.data_dir = (tmp() / ("data" + std::to_string(m_case))).string();
        return test::start_engine(o);
    }

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        m_model = (tmp() / "tiny-base").string();
        m_config = test::synth_tiny_model(m_model);
    }

    void init() {
        m_root = tmp() / ("adapters" + std::to_string(++m_case));
        fs::create_directories(m_root);
    }

    void taken_name_is_a_conflict() {
        test::synth_adapter(m_config, m_root / "de", 1);
        test::synth_adapter(m_config, m_root / "other", 2);
        auto engine = make_engine();
        const std::string de = listed(*engine, "de")->digest;
        for (const char* folder : {"other", "de"}) {  // other content, and the very same folder
            Status s = engine->load_adapter("de", (m_root / folder).string());
            QCOMPARE(s.code, ErrorCode::conflict);
            QVERIFY2(s.message.find("already loaded") != std::string::npos, s.message.c_str());
        }
        QCOMPARE(listed(*engine, "de")->digest, de);
        QCOMPARE(run_request(*engine, "de").value(), de);
        QCOMPARE(engine->load_adapter("other", (m_root / "de").string()).code, ErrorCode::conflict);
        QVERIFY(engine->load_adapter("fresh", (m_root / "other").string()).ok());
        QCOMPARE(listed(*engine, "fresh")->digest, listed(*engine, "other")->digest);
        QCOMPARE(engine->set_alias("de", "fresh").code, ErrorCode::conflict);
    }

    void names_are_checked_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::newRow("empty") << QByteArray("");
        QTest::newRow("base") << QByteArray("base");
        QTest::newRow("dot") << QByteArray(".");
        QTest::newRow("dotdot") << QByteArray("..");
        QTest::newRow("base model id") << QByteArray("tiny-base");
        QTest::newRow("base model prefix") << QByteArray("tiny-base:de");
        QTest::newRow("newline") << QByteArray("de\n2026-11-22 06:40:01 error forged");
        QTest::newRow("nul") << QByteArray("de\0x", 4);
        QTest::newRow("slash") << QByteArray("a/b");
        QTest::newRow("129 characters") << QByteArray(129, 'a');
    }
    void names_are_checked() {
        QFETCH(QByteArray, name);
        test::synth_adapter(m_config, m_root / "ok", 3);
        auto engine = make_engine();
        const std::string n(name.constData(), std::size_t(name.size()));
        Status s = engine->load_adapter(n, (m_root / "ok").string());
        QCOMPARE(s.code, ErrorCode::invalid_argument);
        QVERIFY2(s.message.find("A-Z a-z 0-9 . _ : -") != std::string::npos, s.message.c_str());
        QVERIFY2(s.message.find('\n') == std::string::npos, "the message cannot forge a line");
        QCOMPARE(engine->set_alias(n, "ok").code, ErrorCode::invalid_argument);
        QCOMPARE(int(engine->adapters().size()), 1);
    }

    void folder_with_a_bad_name_is_listed_not_served() {
        test::synth_adapter(m_config, m_root / "my adapter", 4);
        test::synth_adapter(m_config, m_root / "good", 5);
        auto engine = make_engine();
        auto bad = listed(*engine, "my adapter");
        QVERIFY(bad && !bad->compatible);
        QVERIFY2(bad->incompatibility.find("is not allowed") != std::string::npos, bad->incompatibility.c_str());
        QCOMPARE(run_request(*engine, "my adapter").status().code, ErrorCode::not_found);
        QVERIFY(run_request(*engine, "good").ok());
    }

    void unloading_a_busy_adapter_lets_its_requests_finish() {
        test::synth_adapter(m_config, m_root / "busy", 6);
        auto engine = make_engine();
        auto submitted = engine->submit(test::greedy_request("busy", {5, 6, 7}, 24));
        QVERIFY(submitted.ok());
        QVERIFY(engine->unload_adapter("busy").ok());  // vLLM semantics: 200, not 409
        int tokens = 0;
        bool finished = false;
        for (int i = 0; i < 600 && !finished; ++i) {
            auto ev = submitted.value()->next(std::chrono::milliseconds(100));
            if (!ev) continue;
            QVERIFY2(!std::holds_alternative<api::ErrorEvent>(*ev), "a running request failed after the unload");
            if (auto* t = std::get_if<api::TokenEvent>(&*ev)) tokens += int(t->token_ids.size());
            finished = std::holds_alternative<api::FinishEvent>(*ev);
        }
        QVERIFY(finished);
        QCOMPARE(tokens, 24);
        Status gone = run_request(*engine, "busy").status();
        QCOMPARE(gone.code, ErrorCode::not_found);
        QCOMPARE(QString::fromStdString(gone.message), QString("adapter 'busy' was unloaded"));
        QCOMPARE(engine->unload_adapter("busy").code, ErrorCode::not_found);
    }

    void copies_keep_their_own_folder_data() {
        QTest::addColumn<bool>("with_catalog");
        QTest::newRow("no catalog") << false;
        QTest::newRow("catalog") << true;
    }
    void copies_keep_their_own_folder() {
        QFETCH(bool, with_catalog);
        test::synth_adapter(m_config, m_root / "de", 7);
        fs::copy(m_root / "de", m_root / "de-copy", fs::copy_options::recursive);
        const int64_t before =
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        auto engine = make_engine(with_catalog);
        auto de = listed(*engine, "de"), copy = listed(*engine, "de-copy");
        QVERIFY(de && copy);
        QCOMPARE(copy->digest, de->digest);
        QCOMPARE(de->path, fs::canonical(m_root / "de").string());
        QCOMPARE(copy->path, fs::canonical(m_root / "de-copy").string());
        QVERIFY2(de->created_unix >= before - 1, "created is the registration time");

        // The copy gets other weights: its name moves to them; the original keeps its content.
        test::synth_adapter(m_config, m_root / "de-copy", 8);
        test::touch_forward(m_root / "de-copy", 5);
        QCOMPARE(test::impl(*engine).poll_adapter_folders_now().changed, std::vector<std::string>{"de-copy"});
        auto copy2 = listed(*engine, "de-copy");
        QVERIFY(copy2->digest != de->digest);
        QCOMPARE(copy2->path, copy->path);
        QCOMPARE(run_request(*engine, "de-copy").value(), copy2->digest);
        QCOMPARE(run_request(*engine, "de").value(), de->digest);
        QCOMPARE(listed(*engine, "de")->path, de->path);
    }

    void failed_folders_are_listed_once() {
        test::synth_adapter(m_config, m_root / "broken", 9);
        std::ofstream(m_root / "broken" / "adapter_model.safetensors", std::ios::trunc) << "not a safetensors file";
        auto engine = make_engine(true);
        QCOMPARE(count_listed(*engine, "broken"), 1);
        QVERIFY(!listed(*engine, "broken")->compatible);
        for (int i = 0; i < 50; ++i) {
            QVERIFY(!engine->load_adapter("broken", (m_root / "broken").string()).ok());
            QVERIFY(!engine->load_adapter("x" + std::to_string(i), (m_root / "broken").string()).ok());
            test::touch_forward(m_root / "broken", 1);
            test::impl(*engine).poll_adapter_folders_now();
        }
        QCOMPARE(count_listed(*engine, "broken"), 1);
        QCOMPARE(int(engine->adapters().size()), 1);  // API failures are answered, not listed
        QVERIFY(!listed(*engine, "x0"));
    }

    void symlinks_out_of_the_roots_are_refused() {
        const fs::path outside = tmp() / ("outside" + std::to_string(m_case));
        test::synth_adapter(m_config, outside / "secret", 10);
        test::synth_adapter(m_config, m_root / "inside", 11);
        fs::create_directory_symlink(outside / "secret", m_root / "escape");
        fs::create_directory_symlink(m_root / "inside", m_root / "inside-link");
        auto engine = make_engine();
        auto escape = listed(*engine, "escape");
        QVERIFY(escape && !escape->compatible);
        QVERIFY2(escape->incompatibility.find("outside the adapter folders") != std::string::npos,
                 escape->incompatibility.c_str());
        QCOMPARE(run_request(*engine, "escape").status().code, ErrorCode::not_found);
        QVERIFY(run_request(*engine, "inside-link").ok());  // a link that stays inside is fine
        QCOMPARE(listed(*engine, "inside-link")->path, fs::canonical(m_root / "inside").string());

        // The same for one that appears while the engine runs, and it is unlisted when it goes.
        fs::create_directory_symlink(outside / "secret", m_root / "late-escape");
        auto report = test::impl(*engine).poll_adapter_folders_now();
        QVERIFY(report.added.empty());
        QCOMPARE(int(report.failed.size()), 1);
        QVERIFY(!listed(*engine, "late-escape")->compatible);
        fs::remove(m_root / "late-escape");
        test::impl(*engine).poll_adapter_folders_now();
        QVERIFY(!listed(*engine, "late-escape"));
    }
};

QTEST_GUILESS_MAIN(TstAdapterIdentity)
#include "tst_adapter_identity.moc"
