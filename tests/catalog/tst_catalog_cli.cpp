// loradeskd catalog: pin/unpin/alias/show/list/stats/remove with --json on a --data-dir, and the damaged-file
// error with its --start-fresh way out.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

#include "catalog/catalog.h"
#include "catalog/stats_sink.h"
#include "catalog_test_util.h"

using namespace loradesk;
using namespace loradesk::catalog;

namespace {

struct Run {
    int rc;
    QByteArray out, err;
};

Run loradeskd(const QStringList& args) {
    QProcess p;
    p.start(LORADESKD, QStringList{"catalog"} + args);
    p.waitForFinished(30000);
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

}  // namespace

class TstCatalogCli : public QObject {
    Q_OBJECT

  private slots:
    void edit_and_query() {
        QTemporaryDir dir;
        std::string db = (dir.path() + "/catalog.sqlite3").toStdString();
        {
            Catalog c(db);
            c.register_adapter(catalog::test::make_summary("sql-lora", "x"));
            c.register_adapter(catalog::test::make_summary("chat", "y"));
            StatsSink sink(db);
            StatsEvent e;
            e.digest = sha256_hex("x");
            e.ttft_ms = 30;
            e.e2e_ms = 300;
            for (int i = 0; i < 7; ++i) sink.record(e);
        }
        QStringList dd{"--data-dir", dir.path(), "--json"};
        QCOMPARE(loradeskd(QStringList{"pin", "sql-lora"} + dd).rc, 0);
        auto show = loradeskd(QStringList{"show", "sql-lora"} + dd);
        QCOMPARE(show.rc, 0);
        QVERIFY(show.out.contains("\"pinned\": true"));
        QCOMPARE(loradeskd(QStringList{"alias", "db", "sql-lora"} + dd).rc, 0);
        auto by_alias = QJsonDocument::fromJson(loradeskd(QStringList{"show", "db"} + dd).out).object();
        QCOMPARE(by_alias["name"].toString(), QString("sql-lora"));
        QCOMPARE(by_alias["aliases"].toArray().size(), 1);
        auto pinned = QJsonDocument::fromJson(loradeskd(QStringList{"list", "--pinned"} + dd).out).array();
        QCOMPARE(pinned.size(), 1);
        auto by_requests =
            QJsonDocument::fromJson(loradeskd(QStringList{"list", "--sort", "requests"} + dd).out).array();
        QCOMPARE(by_requests.at(0).toObject()["name"].toString(), QString("sql-lora"));
        auto stats = QJsonDocument::fromJson(loradeskd(QStringList{"stats", "db"} + dd).out).object();
        QCOMPARE(stats["total"].toObject()["requests"].toInt(), 7);
        QVERIFY(stats["total"].toObject()["ttft_p50_ms"].toDouble() > 20);
        QCOMPARE(loradeskd(QStringList{"unpin", "db"} + dd).rc, 0);
        QVERIFY(loradeskd(QStringList{"show", "sql-lora"} + dd).out.contains("\"pinned\": false"));
        QCOMPARE(loradeskd(QStringList{"remove", "chat"} + dd).rc, 0);
        QCOMPARE(QJsonDocument::fromJson(loradeskd(QStringList{"list"} + dd).out).array().size(), 1);
        auto missing = loradeskd(QStringList{"show", "chat"} + dd);
        QCOMPARE(missing.rc, 1);
        QVERIFY(missing.err.contains("no adapter or alias 'chat'"));
        QCOMPARE(loradeskd(QStringList{"list", "--tier", "ram"} + dd).rc, 2);
    }
    void damaged_catalog() {
        QTemporaryDir dir;
        std::ofstream((dir.path() + "/catalog.sqlite3").toStdString()) << std::string(5000, '#');
        auto r = loradeskd({"list", "--data-dir", dir.path()});
        QCOMPARE(r.rc, 1);
        QVERIFY2(r.err.contains("--start-fresh"), r.err.constData());
        auto fresh = loradeskd({"list", "--data-dir", dir.path(), "--start-fresh", "--json"});
        QCOMPARE(fresh.rc, 0);
        QVERIFY(fresh.err.contains("catalog.sqlite3.corrupt-"));
        QCOMPARE(QDir(dir.path()).entryList({"catalog.sqlite3.corrupt-*"}).size(), 1);
    }
};

QTEST_GUILESS_MAIN(TstCatalogCli)
#include "tst_catalog_cli.moc"
