// engine/catalog: latency histograms, and the StatsSink writer: exact aggregation, per-minute series with
// quantiles, records that never wait on a locked database, readers beside the writer, events and tiers.
#include <QtTest>

#include <QTemporaryDir>

#include <atomic>
#include <chrono>
#include <thread>

#include "catalog/catalog.h"
#include "catalog/latency_histogram.h"
#include "catalog/stats_sink.h"
#include "catalog_test_util.h"
#include "core/error.h"

using namespace loradesk;
using namespace loradesk::catalog;
using catalog::test::make_summary;

namespace {

StatsEvent request(const std::string& digest, int64_t time_ms, double ttft, double e2e, bool error = false) {
    StatsEvent e;
    e.digest = digest;
    e.time_ms = time_ms;
    e.prompt_tokens = 10;
    e.cached_tokens = 4;
    e.completion_tokens = 5;
    e.ttft_ms = ttft;
    e.e2e_ms = e2e;
    e.error = error;
    return e;
}

constexpr int64_t kT0 = 1'699'999'980'000;  // a fixed unix time in ms, at a minute boundary

}  // namespace

class TstStatsSink : public QObject {
    Q_OBJECT

    std::string db_path(const QTemporaryDir& dir) { return (dir.path() + "/catalog.sqlite3").toStdString(); }

  private slots:
    void bucket_bounds_data() {
        QTest::addColumn<double>("ms");
        QTest::addColumn<int>("bucket");
        QTest::newRow("zero") << 0.0 << 0;
        QTest::newRow("negative") << -5.0 << 0;
        QTest::newRow("0.99") << 0.99 << 0;
        QTest::newRow("1") << 1.0 << 1;
        QTest::newRow("1.5") << 1.5 << 2;
        QTest::newRow("2") << 2.0 << 3;
        QTest::newRow("100") << 100.0 << 14;
        QTest::newRow("huge") << 1e12 << LatencyHistogram::kBuckets - 1;
    }
    void bucket_bounds() {
        QFETCH(double, ms);
        QFETCH(int, bucket);
        QCOMPARE(LatencyHistogram::bucket_of(ms), bucket);
        if (ms >= 0 && bucket < LatencyHistogram::kBuckets - 1) {
            QVERIFY(ms < LatencyHistogram::upper_bound_ms(bucket));
            QVERIFY(ms >= LatencyHistogram::lower_bound_ms(bucket));
        }
    }
    void quantiles_are_within_one_bucket() {
        LatencyHistogram h;
        for (int i = 1; i <= 1000; ++i) h.add(double(i));  // uniform 1..1000 ms
        double p50 = h.quantile(0.5), p95 = h.quantile(0.95);
        // One bucket spans a factor sqrt(2): the estimate must be within that of the true value.
        QVERIFY2(p50 > 500 / 1.4143 && p50 < 500 * 1.4143, qPrintable(QString::number(p50)));
        QVERIFY2(p95 > 950 / 1.4143 && p95 < 950 * 1.4143, qPrintable(QString::number(p95)));
        QVERIFY(p50 < p95);
        auto blob = h.encode();
        auto back = LatencyHistogram::decode(blob.data(), blob.size());
        QCOMPARE(back.total(), uint64_t(1000));
        QCOMPARE(back.quantile(0.5), p50);
        QVERIFY_THROWS_EXCEPTION(ExpectedError, LatencyHistogram::decode(blob.data(), 7));
        QCOMPARE(LatencyHistogram().quantile(0.5), 0.0);
    }
    void aggregates_exactly_per_minute() {
        QTemporaryDir dir;
        std::string digest = sha256_hex("a");
        {
            Catalog c(db_path(dir));
            c.register_adapter(make_summary("a", "a"));
        }
        StatsSink sink(db_path(dir));
        int64_t m0 = kT0 / 60000;
        for (int i = 0; i < 100; ++i) sink.record(request(digest, kT0 + i * 100, 20, 200, i % 10 == 0));  // minute m0
        for (int i = 0; i < 50; ++i) sink.record(request(digest, kT0 + 60000 + i, 400, 4000));            // minute m0+1
        StatsEvent load;
        load.kind = StatsEvent::Kind::cold_load;
        load.digest = digest;
        load.time_ms = kT0;
        load.load_ms = 12.5;
        sink.record(load);
        sink.record(request("", kT0, 5, 50));  // base model traffic
        QVERIFY(sink.flush());
        // Records arriving after a flush land in the same rows (upsert merges counts and histograms).
        for (int i = 0; i < 100; ++i) sink.record(request(digest, kT0 + 1000, 20, 200));
        QVERIFY(sink.flush());

        Catalog c(db_path(dir));
        auto series = c.stats_series(digest, m0 - 5, m0 + 5);
        QCOMPARE(series.size(), std::size_t(2));
        QCOMPARE(series[0].minute, m0);
        QCOMPARE(series[0].requests, int64_t(200));
        QCOMPARE(series[0].errors, int64_t(10));
        QCOMPARE(series[0].prompt_tokens, int64_t(2000));
        QCOMPARE(series[0].cached_tokens, int64_t(800));
        QCOMPARE(series[0].completion_tokens, int64_t(1000));
        QCOMPARE(series[0].cold_loads, int64_t(1));
        QCOMPARE(series[0].load_ms_total, 12.5);
        QVERIFY(series[0].ttft_p50_ms > 16 && series[0].ttft_p50_ms < 23);
        // All samples at 400 ms: the estimate lies inside that bucket, [2^8.5, 2^9) ms.
        QVERIFY(series[1].ttft_p95_ms >= 362 && series[1].ttft_p95_ms < 512);
        auto total = c.stats_total(digest, m0 - 5, m0 + 5);
        QCOMPARE(total.requests, int64_t(250));
        QVERIFY(total.e2e_p95_ms > 2800);  // 50 of 250 at 4000 ms: the p95 lies in that bucket
        QCOMPARE(c.stats_total("", m0, m0).requests, int64_t(1));
        auto rec = c.find("a");
        QCOMPARE(rec->requests_total, int64_t(250));
        QCOMPARE(rec->last_used_unix, (kT0 + 60000 + 49) / 1000);
        QCOMPARE(sink.counters().written, uint64_t(252));
    }
    void records_never_wait_on_a_locked_database() {
        QTemporaryDir dir;
        { Catalog c(db_path(dir)); }
        StatsSinkOptions o;
        o.flush_interval = std::chrono::milliseconds(5);
        o.busy_timeout_ms = 20;
        StatsSink sink(db_path(dir), o);
        Catalog blocker(db_path(dir));
        auto tx = std::make_unique<Transaction>(blocker.db());  // holds the write lock
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 200000; ++i) sink.record(request("x", kT0 + (i % 7) * 60000, 10, 100));
        auto took = std::chrono::steady_clock::now() - start;
        QVERIFY2(took < std::chrono::seconds(2), "record() waited for the database");
        QVERIFY(!sink.flush());  // the writer could not commit while the lock was held
        QVERIFY(sink.counters().write_errors > 0);
        tx.reset();
        QVERIFY(sink.flush());
        QCOMPARE(blocker.stats_total("x", 0, INT64_MAX / 60000).requests, int64_t(200000));
    }
    void readers_see_progress_while_writing() {
        QTemporaryDir dir;
        { Catalog c(db_path(dir)); }
        StatsSinkOptions o;
        o.flush_interval = std::chrono::milliseconds(2);
        StatsSink sink(db_path(dir), o);
        std::atomic<bool> done{false};
        std::atomic<int> reader_errors{0}, reads{0};
        std::vector<std::thread> readers;
        for (int r = 0; r < 2; ++r)
            readers.emplace_back([&] {
                try {
                    Catalog c(db_path(dir));
                    int64_t last = 0;
                    while (!done) {
                        int64_t now = c.stats_total("x", 0, INT64_MAX / 60000).requests;
                        if (now < last) ++reader_errors;  // counts must never go backwards
                        last = now;
                        ++reads;
                    }
                } catch (const std::exception& e) {
                    qWarning("reader: %s", e.what());
                    ++reader_errors;
                }
            });
        for (int i = 0; i < 50000; ++i) {
            sink.record(request("x", kT0 + (i % 3) * 60000, 10, 100));
            if (i % 5000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
        }
        QVERIFY(sink.flush());
        done = true;
        for (auto& t : readers) t.join();
        QCOMPARE(reader_errors.load(), 0);
        QVERIFY(reads.load() > 2);
        Catalog c(db_path(dir));
        QCOMPARE(c.stats_total("x", 0, INT64_MAX / 60000).requests, int64_t(50000));
    }
    void events_tiers_and_shutdown_flush() {
        QTemporaryDir dir;
        {
            Catalog c(db_path(dir));
            c.register_adapter(make_summary("a", "a"));
        }
        {
            StatsSinkOptions o;
            o.flush_interval = std::chrono::hours(1);  // only the destructor's flush writes
            o.max_pending_events = 3;
            StatsSink sink(db_path(dir), o);
            for (int i = 0; i < 5; ++i)
                sink.record_event(EventKind::load, sha256_hex("a"), "a", "slot " + std::to_string(i));
            sink.record_tier(sha256_hex("a"), Tier::gpu);
            sink.record(request(sha256_hex("a"), 0, 1, 2));  // time 0 = now
        }
        Catalog c(db_path(dir));
        auto d = c.show("a");
        QCOMPARE(int(d.adapter.tier), int(Tier::gpu));
        QCOMPARE(d.adapter.requests_total, int64_t(1));
        int loads = 0;
        for (auto& e : d.events) loads += e.kind == EventKind::load;
        QCOMPARE(loads, 3);
        QCOMPARE(
            c.db().query_int("SELECT COUNT(*) FROM events WHERE kind = 'error' AND detail LIKE '2 lifecycle%'").value(),
            int64_t(1));
    }
};

QTEST_GUILESS_MAIN(TstStatsSink)
#include "tst_stats_sink.moc"
