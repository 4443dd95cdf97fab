// engine/core: sha256 against FIPS vectors, dtype conversions, thread pool.
#include <QtTest>

#include <atomic>
#include <cmath>

#include "core/dtype.h"
#include "core/sha256.h"
#include "core/thread_pool.h"

using namespace loradesk;

class TstCoreBasics : public QObject {
    Q_OBJECT
private slots:
    void sha256_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QString>("digest");
        QTest::newRow("empty") << QByteArray() << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        QTest::newRow("abc") << QByteArray("abc") << "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        QTest::newRow("448 bits")
            << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
        QTest::newRow("million a") << QByteArray(1000000, 'a') << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    }
    void sha256() {
        QFETCH(QByteArray, input);
        QFETCH(QString, digest);
        QCOMPARE(QString::fromStdString(sha256_hex(std::string_view(input.constData(), input.size()))), digest);
        // Incremental updates in odd pieces give the same digest.
        Sha256 h;
        for (qsizetype i = 0; i < input.size(); i += 37) h.update(input.constData() + i, std::min<qsizetype>(37, input.size() - i));
        QCOMPARE(QString::fromStdString(h.finish_hex()), digest);
    }
    void bf16_round_trip() {
        QCOMPARE(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
        QCOMPARE(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
        // Round to nearest even: 1 + 2^-8 is exactly halfway between two bf16 values and rounds down.
        QCOMPARE(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
        QCOMPARE(bf16_to_f32(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
        QVERIFY(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
    }
    void f16_round_trip_data() {
        QTest::addColumn<float>("value");
        for (float v : {0.0f, 1.0f, -1.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
            QTest::newRow(qPrintable(QString::number(v))) << v;
    }
    void f16_round_trip() {
        QFETCH(float, value);
        QCOMPARE(f16_to_f32(f32_to_f16(value)), value);
    }
    void f16_overflow_is_inf() { QVERIFY(std::isinf(f16_to_f32(f32_to_f16(1e6f)))); }
    void dtype_names() {
        DType t;
        QVERIFY(parse_dtype("BF16", &t));
        QCOMPARE(t, DType::bf16);
        QCOMPARE(dtype_size(t), std::size_t(2));
        QVERIFY(!parse_dtype("bf16", &t));
    }
    void parallel_for_covers_range() {
        ThreadPool pool(3);
        std::vector<std::atomic<int>> hits(1001);
        for (int rep = 0; rep < 50; ++rep)
            pool.parallel_for(hits.size(), [&](std::size_t b, std::size_t e) {
                for (std::size_t i = b; i < e; ++i) hits[i]++;
            });
        for (auto& h : hits) QCOMPARE(h.load(), 50);
    }
    void parallel_for_rethrows() {
        ThreadPool pool(2);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, pool.parallel_for(100, [](std::size_t b, std::size_t) {
            if (b > 0) throw std::runtime_error("boom");
        }));
    }
};

QTEST_GUILESS_MAIN(TstCoreBasics)
#include "tst_core_basics.moc"
