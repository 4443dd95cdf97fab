// engine/catalog reliability: a helper process hammers the catalog (stats writer + transactions) and is
// SIGKILLed at random moments, many times over. After each kill the database must open, pass
// PRAGMA integrity_check, keep adapters and pins, keep transactions whole, and never lose counts.
#include <QtTest>

#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>

#include "catalog/catalog.h"
#include "catalog_test_util.h"
#include "core/sha256.h"

using namespace loradesk;
using namespace loradesk::catalog;
using catalog::test::make_summary;

class TstCatalogCrash : public QObject {
    Q_OBJECT

  private slots:
    void sigkill_during_heavy_writes() {
        QTemporaryDir dir;
        std::string db = (dir.path() + "/catalog.sqlite3").toStdString();
        {
            Catalog c(db);
            for (int i = 0; i < 10; ++i) {
                auto s = make_summary("a" + std::to_string(i), "adapter " + std::to_string(i));
                c.register_adapter(s);
                if (i < 5) c.set_pinned(s.name, true);
            }
            c.register_adapter(make_summary("extra", "extra"));
        }
        auto* rng = QRandomGenerator::global();
        int64_t last_requests = 0;
        int grew = 0;
        for (int iteration = 0; iteration < 20; ++iteration) {
            QProcess p;
            p.start(CATALOG_HAMMER, {QString::fromStdString(db)});
            QVERIFY2(p.waitForReadyRead(10000), qPrintable(p.readAllStandardError()));
            QTest::qSleep(int(rng->bounded(10, 120)));
            p.kill();  // SIGKILL
            QVERIFY(p.waitForFinished(10000));
            QCOMPARE(p.exitStatus(), QProcess::CrashExit);

            Catalog c(db);
            Statement check(c.db(), "PRAGMA integrity_check");
            QVERIFY(check.step());
            QCOMPARE(QString::fromStdString(check.column_text(0)), QString("ok"));
            auto rows = c.list();
            QCOMPARE(rows.size(), std::size_t(11));
            int pinned = 0;
            int64_t requests = 0;
            for (auto& r : rows) {
                if (r.name != "extra") pinned += r.pinned;
                requests += r.requests_total;
            }
            QCOMPARE(pinned, 5);
            QVERIFY2(requests >= last_requests, "request counts went backwards");
            grew += requests > last_requests;
            last_requests = requests;
            // The per-minute rows and the per-adapter totals are written in the same transaction.
            QCOMPARE(c.db().query_int("SELECT COALESCE(SUM(requests), 0) FROM stats_minute").value(), requests);
            int64_t counter = std::stoll(c.setting("hammer_counter").value_or("0"));
            QCOMPARE(c.db().query_int("SELECT COUNT(*) FROM events WHERE detail = 'hammer'").value(), counter);
        }
        QVERIFY2(grew >= 10, "the helper rarely got to write before being killed; the test proves little");
    }
};

QTEST_GUILESS_MAIN(TstCatalogCrash)
#include "tst_catalog_crash.moc"
