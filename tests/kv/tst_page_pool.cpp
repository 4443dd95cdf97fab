// engine/kv PagePool: sizing from a byte budget, all-or-nothing allocation, reference counting, misuse.
#include <QtTest>

#include "core/error.h"
#include "kv/page_pool.h"

using namespace loradesk;
using loradesk::kv::PagePool;

class TstPagePool : public QObject {
    Q_OBJECT
  private slots:
    void budget_data() {
        QTest::addColumn<qulonglong>("budget");
        QTest::addColumn<qulonglong>("page_bytes");
        QTest::addColumn<int>("pages");
        QTest::newRow("exact") << 4096ULL << 1024ULL << 4;
        QTest::newRow("rounds down") << 4095ULL << 1024ULL << 3;
        QTest::newRow("half a GB of 128 KiB pages") << (512ULL << 20) << (128ULL << 10) << 4096;
    }
    void budget() {
        QFETCH(qulonglong, budget);
        QFETCH(qulonglong, page_bytes);
        QFETCH(int, pages);
        QCOMPARE(PagePool::pages_for_budget(budget, page_bytes), pages);
    }
    void budget_too_small() {
        try {
            PagePool::pages_for_budget(100, 1024);
            QFAIL("expected an error");
        } catch (const ExpectedError& e) {
            QVERIFY(QString(e.what()).contains("--kv-memory"));
        }
        QVERIFY_THROWS_EXCEPTION(Error, PagePool(0, 16));
        QVERIFY_THROWS_EXCEPTION(Error, PagePool(4, 0));
    }
    void allocate_all_or_nothing() {
        PagePool pool(5, 16);
        QCOMPARE(pool.pages_for_tokens(33), 3);
        std::vector<int32_t> a;
        QVERIFY(pool.allocate(3, a));
        QCOMPARE(pool.n_free(), 2);
        QVERIFY(!pool.allocate(3, a));
        QCOMPARE(a.size(), std::size_t(3));
        QCOMPARE(pool.n_free(), 2);
        QVERIFY(pool.allocate(2, a));
        QCOMPARE(pool.n_free(), 0);
        std::sort(a.begin(), a.end());
        QCOMPARE(a, (std::vector<int32_t>{0, 1, 2, 3, 4}));
        pool.release_all(a);
        QCOMPARE(pool.n_free(), 5);
    }
    void reference_counts() {
        PagePool pool(2, 4);
        std::vector<int32_t> a;
        QVERIFY(pool.allocate(1, a));
        pool.add_ref(a[0]);
        QCOMPARE(pool.ref_count(a[0]), 2);
        pool.release(a[0]);
        QCOMPARE(pool.n_free(), 1);
        pool.release(a[0]);
        QCOMPARE(pool.n_free(), 2);
        QVERIFY_THROWS_EXCEPTION(Error, pool.release(a[0]));
        QVERIFY_THROWS_EXCEPTION(Error, pool.add_ref(a[0]));
        QVERIFY_THROWS_EXCEPTION(Error, pool.release(7));
    }
};

QTEST_GUILESS_MAIN(TstPagePool)
#include "tst_page_pool.moc"
