// engine/catalog: schema and migrations, adapters / names / versions / aliases / pins / events /
// settings, listing with filters and sorting, persistence across reopen, damaged and unusable files.
#include <QtTest>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "catalog/catalog.h"
#include "catalog/catalog_schema.h"
#include "catalog_test_util.h"
#include "core/error.h"

using namespace loradesk;
using namespace loradesk::catalog;
using catalog::test::make_summary;

class TstCatalogStore : public QObject {
    Q_OBJECT

    std::string db_path(const QTemporaryDir& dir) { return (dir.path() + "/catalog.sqlite3").toStdString(); }

  private slots:
    void schema_pragmas() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        QCOMPARE(c.db().query_int("PRAGMA user_version").value(), int64_t(kSchemaVersion));
        QCOMPARE(c.db().query_int("PRAGMA foreign_keys").value(), int64_t(1));
        QCOMPARE(c.db().query_int("PRAGMA synchronous").value(), int64_t(1));  // NORMAL
        Statement jm(c.db(), "PRAGMA journal_mode");
        QVERIFY(jm.step());
        QCOMPARE(QString::fromStdString(jm.column_text(0)), QString("wal"));
        QCOMPARE(QString::fromStdString(c.integrity_check()), QString("ok"));
    }
    void newer_schema_is_refused() {
        QTemporaryDir dir;
        {
            Catalog c(db_path(dir));
            c.db().exec("PRAGMA user_version=99");
        }
        try {
            Catalog c(db_path(dir));
            QFAIL("opened a database from a newer schema");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::unsupported);
            QVERIFY(QString(e.what()).contains("newer loradesk"));
        }
    }
    void transaction_rolls_back_in_destructor() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        try {
            Transaction tx(c.db());
            c.set_setting("k", "v");
            throw std::runtime_error("boom");
        } catch (const std::runtime_error&) {
        }
        QVERIFY(!c.setting("k").has_value());
        {
            Transaction tx(c.db());
            c.set_setting("k", "v");
            tx.commit();
        }
        QCOMPARE(QString::fromStdString(*c.setting("k")), QString("v"));
    }
    void register_and_versions() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        auto r1 = c.register_adapter(make_summary("sql", "v1"));
        QCOMPARE(int(r1.outcome), int(RegisterOutcome::added));
        QCOMPARE(r1.version, 1);
        QCOMPARE(int(c.register_adapter(make_summary("sql", "v1")).outcome), int(RegisterOutcome::unchanged));
        c.set_pinned("sql", true);
        c.set_notes("sql", "from the data team");
        auto r2 = c.register_adapter(make_summary("sql", "v2"));
        QCOMPARE(int(r2.outcome), int(RegisterOutcome::new_version));
        QCOMPARE(r2.version, 2);
        auto d = c.show("sql");
        QCOMPARE(QString::fromStdString(d.adapter.digest), QString::fromStdString(sha256_hex("v2")));
        QVERIFY(d.adapter.pinned);  // carried over to the new version
        QCOMPARE(QString::fromStdString(d.adapter.notes), QString("from the data team"));
        QCOMPARE(d.versions.size(), std::size_t(2));
        QVERIFY(d.versions[1].current && !d.versions[0].current);
        auto r3 = c.rollback("sql", 1);
        QCOMPARE(r3.version, 3);
        QCOMPARE(QString::fromStdString(c.find("sql")->digest), QString::fromStdString(sha256_hex("v1")));
        QCOMPARE(c.list().size(), std::size_t(1));
        QVERIFY(!c.show("sql").events.empty());
        QCOMPARE(int(c.show("sql").events.front().kind), int(EventKind::version));
    }
    void aliases_and_resolution() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        c.register_adapter(make_summary("sql", "a"));
        c.register_adapter(make_summary("chat", "b"));
        c.set_alias("db", "sql");
        QCOMPARE(QString::fromStdString(*c.resolve("db")), QString("sql"));
        QCOMPARE(QString::fromStdString(c.show("db").adapter.name), QString("sql"));
        QCOMPARE(c.show("sql").aliases.size(), std::size_t(1));
        c.set_alias("db", "chat");  // re-pointing an alias is allowed
        QCOMPARE(QString::fromStdString(*c.resolve("db")), QString("chat"));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, c.set_alias("sql", "chat"));  // a name cannot be an alias
        QVERIFY_THROWS_EXCEPTION(ExpectedError, c.set_alias("x", "nope"));
        c.remove_alias("db");
        QVERIFY(!c.resolve("db"));
    }
    void remove_keeps_files_and_is_remembered() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        auto s = make_summary("sql", "a", 8, dir.path().toStdString());
        std::filesystem::create_directories(s.path);
        c.register_adapter(s);
        c.set_alias("db", "sql");
        c.remove_adapter("db");
        QVERIFY(!c.resolve("sql") && !c.resolve("db"));
        QVERIFY(std::filesystem::exists(s.path));
        QVERIFY(c.is_ignored(s.path));
        QCOMPARE(c.db().query_int("SELECT COUNT(*) FROM adapters").value(), int64_t(0));
        c.register_adapter(s);  // an explicit import brings it back
        QVERIFY(!c.is_ignored(s.path));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, c.remove_adapter("nope"));
    }
    void list_filters_and_sorting_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("base");
        QTest::addColumn<int>("pinned");  // -1 any
        QTest::addColumn<QString>("tier");
        QTest::addColumn<QString>("sort");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("all by name") << ""
                                     << "" << -1 << ""
                                     << "name" << QStringList{"alpha", "Beta", "gamma", "sql-big"};
        QTest::newRow("substring, any case") << "A"
                                             << "" << -1 << ""
                                             << "name" << QStringList{"alpha", "Beta", "gamma"};
        QTest::newRow("pinned") << ""
                                << "" << 1 << ""
                                << "name" << QStringList{"Beta", "sql-big"};
        QTest::newRow("unpinned") << ""
                                  << "" << 0 << ""
                                  << "name" << QStringList{"alpha", "gamma"};
        QTest::newRow("by size") << ""
                                 << "" << -1 << ""
                                 << "size" << QStringList{"sql-big", "gamma", "Beta", "alpha"};
        QTest::newRow("tier gpu") << ""
                                  << "" << -1 << "gpu"
                                  << "name" << QStringList{"gamma"};
        QTest::newRow("base") << ""
                              << "llama" << -1 << ""
                              << "name" << QStringList{"sql-big"};
        QTest::newRow("last used") << ""
                                   << "" << -1 << ""
                                   << "last-used" << QStringList{"Beta", "alpha", "gamma", "sql-big"};
    }
    void list_filters_and_sorting() {
        QFETCH(QString, name);
        QFETCH(QString, base);
        QFETCH(int, pinned);
        QFETCH(QString, tier);
        QFETCH(QString, sort);
        QFETCH(QStringList, expected);
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        c.register_adapter(make_summary("alpha", "1", 4));
        c.register_adapter(make_summary("Beta", "2", 8));
        c.register_adapter(make_summary("gamma", "3", 16));
        auto big = make_summary("sql-big", "4", 64);
        big.base_model = "llama";
        c.register_adapter(big);
        c.set_pinned("Beta", true);
        c.set_pinned("sql-big", true);
        c.set_tier(sha256_hex("3"), Tier::gpu);
        c.db().exec("UPDATE adapters SET last_used_unix = 100 WHERE digest = '" + sha256_hex("1") + "'");
        c.db().exec("UPDATE adapters SET last_used_unix = 200 WHERE digest = '" + sha256_hex("2") + "'");
        ListQuery q;
        q.name_contains = name.toStdString();
        q.base_model = base.toStdString();
        if (pinned >= 0) q.pinned = pinned == 1;
        if (!tier.isEmpty()) {
            Tier t;
            QVERIFY(parse_tier(tier.toStdString(), &t));
            q.tier = t;
        }
        QVERIFY(parse_sort_key(sort.toStdString(), &q.sort));
        QStringList got;
        for (auto& r : c.list(q)) got << QString::fromStdString(r.name);
        QCOMPARE(got, expected);
    }
    void runtime_tiers_override_stored() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        c.register_adapter(make_summary("a", "1"));
        c.register_adapter(make_summary("b", "2"));
        ListQuery q;
        q.runtime_tiers[sha256_hex("2")] = Tier::cpu;
        q.tier = Tier::cpu;
        auto rows = c.list(q);
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(rows[0].name), QString("b"));
        q.tier = Tier::disk;
        q.limit = 1;
        QCOMPARE(QString::fromStdString(c.list(q).at(0).name), QString("a"));
    }
    void everything_persists_across_reopen() {
        QTemporaryDir dir;
        {
            Catalog c(db_path(dir));
            c.register_base_model("Qwen3-0.6B", "/models/qwen3", "Qwen3ForCausalLM");
            c.register_adapter(make_summary("sql", "a"),
                               {Compat::incompatible, "rank 512 > --max-lora-rank 64", "Qwen3-0.6B"});
            c.set_pinned("sql", true);
            c.set_alias("db", "sql");
            c.set_setting("theme", "dark");
        }
        Catalog c(db_path(dir));
        auto d = c.show("db");
        QVERIFY(d.adapter.pinned);
        QCOMPARE(int(d.adapter.compat), int(Compat::incompatible));
        QCOMPARE(QString::fromStdString(d.adapter.checked_base), QString("Qwen3-0.6B"));
        QCOMPARE(QString::fromStdString(d.adapter.compat_reason), QString("rank 512 > --max-lora-rank 64"));
        QCOMPARE(d.adapter.targets, (std::vector<std::string>{"q_proj", "v_proj"}));
        QCOMPARE(d.adapter.layers, (std::vector<int>{0, 1, 2}));
        QCOMPARE(QString::fromStdString(*c.setting("theme")), QString("dark"));
    }
    void damaged_file_gives_clear_error_and_start_fresh_keeps_it() {
        QTemporaryDir dir;
        std::string path = db_path(dir);
        {
            std::ofstream f(path, std::ios::binary);
            f << std::string(8192, 'x');
        }
        try {
            Catalog c(path);
            QFAIL("opened a damaged database");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::corrupt_file);
            QVERIFY2(QString(e.what()).contains("--start-fresh"), e.what());
            QVERIFY(QString(e.what()).contains("corrupt-"));
        }
        CatalogOptions o;
        o.start_fresh_if_corrupt = true;
        Catalog c(path, o);
        QVERIFY(!c.moved_aside().empty());
        QVERIFY(std::filesystem::exists(c.moved_aside()));
        QCOMPARE(std::filesystem::file_size(c.moved_aside()), std::uintmax_t(8192));
        QVERIFY(c.list().empty());
    }
    void damaged_pages_are_detected() {
        QTemporaryDir dir;
        std::string path = db_path(dir);
        {
            Catalog c(path);
            for (int i = 0; i < 300; ++i) c.register_adapter(make_summary("a" + std::to_string(i), std::to_string(i)));
            c.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
        }
        {
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(4096 * 3);  // the middle of the adapters b-tree, past the header page
            f << std::string(4096, '\x5a');
        }
        try {
            Catalog c(path);
            QFAIL("opened a database with damaged pages");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::corrupt_file);
        }
    }
    void unusable_locations_data() {
        QTest::addColumn<QString>("what");
        QTest::newRow("data dir is a file") << "file";
        QTest::newRow("database is a directory") << "dir";
        QTest::newRow("missing directory") << "missing";
        QTest::newRow("read-only directory") << "readonly";
    }
    void unusable_locations() {
        QFETCH(QString, what);
        QTemporaryDir dir;
        std::string root = dir.path().toStdString();
        std::string path;
        if (what == "file") {
            std::ofstream(root + "/plain") << "x";
            QVERIFY_THROWS_EXCEPTION(ExpectedError, catalog_path_in(root + "/plain", true));
            path = root + "/plain/catalog.sqlite3";
        } else if (what == "dir") {
            std::filesystem::create_directories(root + "/catalog.sqlite3");
            path = root + "/catalog.sqlite3";
        } else if (what == "missing") {
            path = root + "/nope/catalog.sqlite3";
        } else {
            if (geteuid() == 0) QSKIP("root ignores directory permissions");
            std::filesystem::create_directories(root + "/ro");
            std::filesystem::permissions(root + "/ro",
                                         std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
            path = root + "/ro/catalog.sqlite3";
        }
        try {
            Catalog c(path);
            QFAIL("opened an unusable location");
        } catch (const ExpectedError& e) {
            QCOMPARE(e.code(), ErrorCode::io);
            QVERIFY2(QString(e.what()).contains("--data-dir"), e.what());
        }
    }

    void names_are_checked() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        for (const std::string& bad :
             {std::string("a\nb"), std::string("x\0y", 3), std::string("base"), std::string(200, 'n')}) {
            try {
                c.register_adapter(make_summary(bad, "v1"));
                QFAIL("registered a name that is not allowed");
            } catch (const ExpectedError& e) {
                QCOMPARE(e.code(), ErrorCode::invalid_argument);
            }
        }
        c.register_adapter(make_summary("sql", "v1"));
        QVERIFY_THROWS_EXCEPTION(ExpectedError, c.set_alias("bad alias", "sql"));
        QCOMPARE(int(c.list().size()), 1);
    }

    void same_content_keeps_each_names_folder() {
        QTemporaryDir dir;
        Catalog c(db_path(dir));
        c.register_adapter(make_summary("de", "same", 8, "/a"));
        c.register_adapter(make_summary("de-copy", "same", 8, "/b"));
        QCOMPARE(QString::fromStdString(c.find("de")->path), QString("/a/de"));
        QCOMPARE(QString::fromStdString(c.find("de-copy")->path), QString("/b/de-copy"));
        // The same name and content from a moved folder: the name's path follows.
        c.register_adapter(make_summary("de", "same", 8, "/moved"));
        QCOMPARE(QString::fromStdString(c.find("de")->path), QString("/moved/de"));
        QCOMPARE(QString::fromStdString(c.find("de-copy")->path), QString("/b/de-copy"));
    }

    void folder_digest_cache() {
        QTemporaryDir dir;
        {
            Catalog c(db_path(dir));
            QVERIFY(!c.folder_digest("/a/de"));
            FolderDigest f;
            f.path = "/a/de";
            f.signature = "sig-1";
            f.summary = make_summary("", "content", 16, "/a");
            f.compat_key = "tiny|layers 3";
            f.compat = Compat::incompatible;
            f.compat_reason = "targets o_proj with in_features 4096";
            f.hashed_unix = 1700000000;
            c.put_folder_digest(f);
            f.path = "/a/es";
            f.compat = Compat::compatible;
            c.put_folder_digest(f);
            QCOMPARE(int(c.folder_digests().size()), 2);
            c.forget_folder_digest("/a/es");
            QCOMPARE(c.content_created_unix(f.summary.digest), int64_t(0));  // cached is not catalogued
        }
        Catalog c(db_path(dir));  // persists
        auto got = c.folder_digest("/a/de");
        QVERIFY(got);
        QCOMPARE(QString::fromStdString(got->signature), QString("sig-1"));
        QCOMPARE(QString::fromStdString(got->summary.digest), QString::fromStdString(sha256_hex("content")));
        QCOMPARE(got->summary.rank, 16);
        QCOMPARE(got->summary.targets, (std::vector<std::string>{"q_proj", "v_proj"}));
        QCOMPARE(got->summary.layers, (std::vector<int>{0, 1, 2}));
        QCOMPARE(QString::fromStdString(got->summary.path), QString("/a/de"));
        QCOMPARE(int(got->compat), int(Compat::incompatible));
        QCOMPARE(QString::fromStdString(got->compat_reason), QString("targets o_proj with in_features 4096"));
        QCOMPARE(got->hashed_unix, int64_t(1700000000));
        QVERIFY(!c.folder_digest("/a/es"));
        c.register_adapter(make_summary("de", "content"));
        QVERIFY(c.content_created_unix(got->summary.digest) > 0);
    }

    void version_1_database_is_migrated() {
        QTemporaryDir dir;
        {
            Catalog c(db_path(dir));
            c.register_adapter(make_summary("sql", "v1"));
            c.db().exec("DROP TABLE folder_digests; PRAGMA user_version=1");  // as a v1 build left it
        }
        Catalog c(db_path(dir));
        QCOMPARE(c.db().query_int("PRAGMA user_version").value(), int64_t(2));
        QVERIFY(c.find("sql"));
        FolderDigest f;
        f.path = "/x";
        f.summary = make_summary("", "v1");
        c.put_folder_digest(f);
        QVERIFY(c.folder_digest("/x"));
    }
};

QTEST_GUILESS_MAIN(TstCatalogStore)
#include "tst_catalog_store.moc"
