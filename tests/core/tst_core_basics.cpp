// engine/core: sha256 against FIPS vectors, dtype conversions, thread pool, whole-file reads.
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/dtype.h"
#include "core/error.h"
#include "core/mapped_file.h"
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
        QTest::newRow("448 bits") << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                                  << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
        QTest::newRow("million a") << QByteArray(1000000, 'a')
                                   << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    }
    void sha256() {
        QFETCH(QByteArray, input);
        QFETCH(QString, digest);
        QCOMPARE(QString::fromStdString(sha256_hex(std::string_view(input.constData(), input.size()))), digest);
        // Incremental updates in odd pieces give the same digest.
        Sha256 h;
        for (qsizetype i = 0; i < input.size(); i += 37)
            h.update(input.constData() + i, std::min<qsizetype>(37, input.size() - i));
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

    void file_reads_map_and_copy_agree() {
        QTemporaryDir dir;
        const std::string path = (dir.path() + "/bytes").toStdString();
        std::string bytes(100000, '\0');
        for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 131 % 251);
        std::ofstream(path, std::ios::binary) << bytes;
        MappedFile mapped(path, FileRead::map), copied(path, FileRead::copy);
        QCOMPARE(copied.size(), bytes.size());
        QCOMPARE(mapped.size(), bytes.size());
        QVERIFY(std::memcmp(copied.data(), bytes.data(), bytes.size()) == 0);
        QVERIFY(std::memcmp(mapped.data(), bytes.data(), bytes.size()) == 0);
        std::ofstream(path, std::ios::binary | std::ios::trunc);  // shrink in place: the copy is unaffected
        QCOMPARE(copied.data()[99999], uint8_t(bytes[99999]));
        QCOMPARE(MappedFile(path, FileRead::copy).size(), std::size_t(0));
        QCOMPARE(read_text_file(path), std::string());
    }
    // Opening a FIFO for reading waits for a writer: a FIFO named like a model or adapter file hung the thread
    // that opened it. Every whole-file read refuses it at once.
    void file_reads_refuse_what_is_not_a_regular_file() {
        QTemporaryDir dir;
        const std::string fifo = (dir.path() + "/fifo").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        auto refused = [](auto&& read) {
            try {
                read();
            } catch (const Error& e) {
                return e.code() == ErrorCode::invalid_argument && std::strstr(e.what(), "not a regular file");
            }
            return false;
        };
        QVERIFY(refused([&] { MappedFile f(fifo, FileRead::map); }));
        QVERIFY(refused([&] { MappedFile f(fifo, FileRead::copy); }));
        QVERIFY(refused([&] { read_text_file(fifo); }));
        QVERIFY(refused([&] { read_text_file("/dev/zero"); }));
        try {
            MappedFile f(dir.path().toStdString(), FileRead::copy);
            QFAIL("a directory was read");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::invalid_argument);
        }
    }
    void text_reads_are_bounded() {
        QTemporaryDir dir;
        const std::string path = (dir.path() + "/big.json").toStdString();
        std::ofstream(path) << std::string(5000, ' ');
        QCOMPARE(read_text_file(path, 5000).size(), std::size_t(5000));
        try {
            read_text_file(path, 4999);
            QFAIL("over the limit");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::too_large);
        }
    }
};

QTEST_GUILESS_MAIN(TstCoreBasics)
#include "tst_core_basics.moc"
