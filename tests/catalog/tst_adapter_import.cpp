// engine/catalog: importing adapter folders and the polling watcher (new, changed, vanished, removed,
// unreadable folders), and the base-model compatibility check.
#include <QtTest>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "catalog/adapter_import.h"
#include "catalog_test_util.h"
#include "core/error.h"
#include "core/sha256.h"

using namespace loradesk;
using namespace loradesk::catalog;
namespace fs = std::filesystem;

namespace {

void write_adapter(const fs::path& dir, const std::string& config) {
    fs::create_directories(dir);
    std::ofstream(dir / "adapter_config.json") << config;
    std::ofstream(dir / "adapter_model.safetensors") << "tensors of " << config;
}

// Stands in for lora::summarize_adapter: identity from the config text; "bad" configs fail like a
// malformed adapter would.
lora::AdapterSummary fake_summarize(const std::string& dir) {
    std::ifstream f(fs::path(dir) / "adapter_config.json");
    std::stringstream ss;
    ss << f.rdbuf();
    if (ss.str().find("bad") != std::string::npos)
        throw_expected(ErrorCode::unsupported, "adapter uses DoRA, which loradesk cannot apply exactly");
    auto s = catalog::test::make_summary("ignored-by-import", ss.str());
    s.size_bytes = fs::file_size(fs::path(dir) / "adapter_model.safetensors");
    return s;
}

}  // namespace

class TstAdapterImport : public QObject {
    Q_OBJECT

  private slots:
    void compatibility_data() {
        QTest::addColumn<QStringList>("targets");
        QTest::addColumn<int>("max_layer");
        QTest::addColumn<int>("rank");
        QTest::addColumn<QString>("reason");  // empty = compatible
        QTest::newRow("fits") << QStringList{"q_proj", "v_proj"} << 3 << 8 << "";
        QTest::newRow("unknown module") << QStringList{"q_proj", "lm_head"} << 3 << 8 << "targets module 'lm_head'";
        QTest::newRow("too many layers") << QStringList{"q_proj"} << 4 << 8 << "layer 4";
        QTest::newRow("rank too high") << QStringList{"q_proj"} << 0 << 128 << "--max-lora-rank 64";
    }
    void compatibility() {
        QFETCH(QStringList, targets);
        QFETCH(int, max_layer);
        QFETCH(int, rank);
        QFETCH(QString, reason);
        BaseShapes base{"tiny", 4, {"q_proj", "k_proj", "v_proj", "o_proj"}, 64};
        auto s = catalog::test::make_summary("a", "a", rank);
        s.targets.clear();
        for (auto& t : targets) s.targets.push_back(t.toStdString());
        s.layers = {0, max_layer};
        auto c = check_against_base(s, base);
        QCOMPARE(QString::fromStdString(c.base_model), QString("tiny"));
        if (reason.isEmpty()) {
            QCOMPARE(int(c.state), int(Compat::compatible));
        } else {
            QCOMPARE(int(c.state), int(Compat::incompatible));
            QVERIFY2(QString::fromStdString(c.reason).contains(reason), c.reason.c_str());
        }
    }
    void import_names_after_folders() {
        QTemporaryDir dir;
        fs::path root = dir.path().toStdString() + "/adapters";
        write_adapter(root / "sql-lora", "{\"r\": 8}");
        write_adapter(root / "chat", "{\"r\": 16}");
        write_adapter(root / "broken", "bad");
        fs::create_directories(root / "not-an-adapter");
        Catalog c(dir.path().toStdString() + "/catalog.sqlite3");
        auto report = import_path(c, root.string(), fake_summarize);
        QCOMPARE(report.registered.size(), std::size_t(2));
        QCOMPARE(report.failed.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(report.failed[0].second).contains("DoRA"));
        auto rec = c.find("sql-lora");
        QVERIFY(rec.has_value());
        QCOMPARE(QString::fromStdString(rec->path), QString::fromStdString((root / "sql-lora").string()));
        QVERIFY(c.find("chat").has_value());
        // A single adapter folder imports just that one.
        QCOMPARE(import_path(c, (root / "chat").string(), fake_summarize).registered.size(), std::size_t(1));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, import_path(c, (root / "nope").string(), fake_summarize));
    }
    void watcher_tracks_folders() {
        QTemporaryDir dir;
        fs::path root = dir.path().toStdString() + "/adapters";
        std::string db = dir.path().toStdString() + "/catalog.sqlite3";
        write_adapter(root / "a", "{\"r\": 8}");
        write_adapter(root / "b", "{\"r\": 4}");
        int summarize_calls = 0;
        auto counting = [&](const std::string& d) {
            ++summarize_calls;
            return fake_summarize(d);
        };
        BaseShapes base{"tiny", 8, {"q_proj", "v_proj"}, 0};
        AdapterWatcher w(db, {root.string()}, counting,
                         [&](const lora::AdapterSummary& s) { return check_against_base(s, base); });
        QCOMPARE(w.poll_once().registered.size(), std::size_t(2));
        auto again = w.poll_once();
        QCOMPARE(again.registered.size(), std::size_t(0));
        QCOMPARE(again.skipped, 2);
        QCOMPARE(summarize_calls, 2);  // unchanged folders are not re-read

        write_adapter(root / "a", "{\"r\": 8, \"lora_alpha\": 32}");  // changed content: a new version
        write_adapter(root / "c", "bad");                             // unreadable: reported once
        auto changed = w.poll_once();
        QCOMPARE(changed.registered.size(), std::size_t(1));
        QCOMPARE(int(changed.registered[0].outcome), int(RegisterOutcome::new_version));
        QCOMPARE(changed.failed.size(), std::size_t(1));
        QCOMPARE(w.poll_once().failed.size(), std::size_t(0));

        fs::remove_all(root / "b");
        auto gone = w.poll_once();
        QCOMPARE(gone.missing, (std::vector<std::string>{"b"}));
        Catalog c(db);
        QVERIFY(c.find("b")->missing);
        QCOMPARE(int(c.find("a")->compat), int(Compat::compatible));
        QCOMPARE(c.show("a").versions.size(), std::size_t(2));

        write_adapter(root / "b", "{\"r\": 4}");  // back again
        QCOMPARE(w.poll_once().registered.size(), std::size_t(1));
        QVERIFY(!c.find("b")->missing);

        c.remove_adapter("a");
        QCOMPARE(w.poll_once().registered.size(), std::size_t(0));  // removed stays removed
        QVERIFY(fs::exists(root / "a" / "adapter_config.json"));    // and its files stay
        QVERIFY(!c.find("a"));
    }
    void watcher_thread_picks_up_new_folders() {
        QTemporaryDir dir;
        fs::path root = dir.path().toStdString() + "/adapters";
        fs::create_directories(root);
        std::string db = dir.path().toStdString() + "/catalog.sqlite3";
        AdapterWatcher w(db, {root.string()}, fake_summarize, {}, std::chrono::milliseconds(20));
        w.start();
        write_adapter(root / "late", "{\"r\": 2}");
        Catalog c(db);
        QTRY_VERIFY_WITH_TIMEOUT(c.find("late").has_value(), 5000);
        w.stop();
    }
};

QTEST_GUILESS_MAIN(TstAdapterImport)
#include "tst_adapter_import.moc"
