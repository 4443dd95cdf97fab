// The bf16 GEMM through cuBLASLt (kernels/bf16_gemm.h) against the skinny GEMM's C++ twin (ref::gemv, the same
// y = x w^T): token counts below, at and between tuned counts and past the last one, bf16 and f32 output, row strides
// wider than the rows; each case once with cuBLASLt's first offer and once after tune() chose over two copies of the
// weights, so that a tuned algorithm is also taken at token counts it was not timed at. Label cuda.
#include <QtTest>
#include <cmath>
#include <random>

#include "bf16_gemm.h"
#include "device_buffer.h"
#include "kernel_params.h"
#include "kernel_test_util.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

class TstBf16GemmCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void matches_twin_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("tuned_at");  // tune() at this token count first; 0: untuned
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("y_pad");
        QTest::addColumn<bool>("f32");
        for (int tuned : {0, 8})
            for (int tokens : {3, 5, 8, 9}) {
                const QString t = tuned ? QString(" tuned at %1").arg(tuned) : QString();
                QTest::newRow(qPrintable(QString("%1 tokens 4096x1536%2").arg(tokens).arg(t)))
                    << tokens << tuned << 4096 << 1536 << 0 << false;
                QTest::newRow(qPrintable(QString("%1 tokens 1032x200 padded rows%2").arg(tokens).arg(t)))
                    << tokens << tuned << 1032 << 200 << 24 << false;
            }
        QTest::newRow("300 tokens (past the tuned counts) 512x768") << 300 << 256 << 512 << 768 << 0 << false;
        QTest::newRow("lm_head rows f32 6 tokens 2048x5000 tuned at 8") << 6 << 8 << 2048 << 5000 << 4 << true;
        QTest::newRow("f32 17 tokens 256x96") << 17 << 0 << 256 << 96 << 0 << true;
    }
    void matches_twin() {
        QFETCH(int, tokens);
        QFETCH(int, tuned_at);
        QFETCH(int, k);
        QFETCH(int, n);
        QFETCH(int, y_pad);
        QFETCH(bool, f32);
        std::mt19937 rng(uint32_t(tokens * 977 + k + n * 13 + tuned_at));
        const int64_t ldy = n + y_pad, rows = std::max(tokens, tuned_at);
        const std::vector<uint16_t> w = random_bf16(rng, std::size_t(n) * k),
                                    x = random_bf16(rng, std::size_t(rows) * k);
        std::vector<float> ref_f32(std::size_t(tokens) * ldy, 0.0f);
        std::vector<uint16_t> ref_bf16(std::size_t(tokens) * ldy, 0);
        GemvParams g;
        g.w = w.data(), g.x = x.data(), g.x_row_stride = k, g.n_tokens = tokens, g.in = k, g.out_rows = n;
        g.y = f32 ? static_cast<void*>(ref_f32.data()) : static_cast<void*>(ref_bf16.data());
        g.y_row_stride = ldy, g.f32_out = f32;
        ref::gemv(g);

        Bf16Gemm gemm;
        DeviceBuffer<uint8_t> ws(std::vector<uint8_t>(std::size_t(32) << 20));
        QVERIFY(gemm.init(ws.get(), std::size_t(32) << 20));
        DeviceBuffer<uint16_t> d_w(w), d_w2(w), d_x(x);
        DeviceBuffer<float> d_yf(std::vector<float>(std::size_t(rows) * ldy, NAN));
        DeviceBuffer<uint16_t> d_yb(std::vector<uint16_t>(std::size_t(rows) * ldy, 0x7fc1));
        void* y = f32 ? static_cast<void*>(d_yf.get()) : static_cast<void*>(d_yb.get());
        if (tuned_at) {
            const uint16_t* weights[] = {d_w.get(), d_w2.get()};
            QCOMPARE(gemm.tune({nullptr, d_x.get(), y, k, ldy, tuned_at, n, k, f32}, weights, 2, nullptr), cudaSuccess);
            QVERIFY(gemm.tuned({nullptr, d_x.get(), y, k, ldy, tuned_at, n, k, f32}));
        }
        QCOMPARE(gemm.run({d_w.get(), d_x.get(), y, k, ldy, tokens, n, k, f32}, nullptr), cudaSuccess);
        QCOMPARE(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<float> got, want;
        const std::vector<float> yf = d_yf.download();
        const std::vector<uint16_t> yb = d_yb.download();
        for (int t = 0; t < tokens; ++t)
            for (int c = 0; c < n; ++c) {
                const std::size_t i = std::size_t(t) * ldy + c;
                got.push_back(f32 ? yf[i] : ref::bf16_to_f32(yb[i]));
                want.push_back(f32 ? ref_f32[i] : ref::bf16_to_f32(ref_bf16[i]));
            }
        // f32 accumulation in a different order, then (bf16 output) one rounding on each side.
        QVERIFY2(rel_l2(got, want) < (f32 ? 1e-5 : 4e-3), qPrintable(QString::number(rel_l2(got, want))));
        if (!f32)  // the padding between rows stays untouched
            for (int t = 0; t + 1 < tokens && y_pad > 0; ++t) QCOMPARE(yb[std::size_t(t) * ldy + n], uint16_t(0x7fc1));
    }

    void refuses_what_it_cannot_run() {
        Bf16Gemm gemm;
        uint16_t* p = nullptr;
        QVERIFY(cudaMalloc(reinterpret_cast<void**>(&p), 1 << 16) == cudaSuccess);
        QCOMPARE(gemm.run({p, p, p, 64, 64, 4, 64, 64, false}, nullptr), cudaErrorInvalidValue);  // before init
        DeviceBuffer<uint8_t> ws(std::vector<uint8_t>(1 << 20));
        QVERIFY(gemm.init(ws.get(), 1 << 20));
        QCOMPARE(gemm.run({p, p, p + 1, 64, 64, 4, 64, 64, false}, nullptr), cudaErrorInvalidValue);  // misaligned y
        QCOMPARE(gemm.run({p, p, p, 60, 64, 4, 64, 60, false}, nullptr), cudaErrorInvalidValue);      // k % 8
        QCOMPARE(gemm.run({p, p, p, 64, 32, 4, 64, 64, false}, nullptr), cudaErrorInvalidValue);      // ldy < n
        cudaFree(p);
    }
};

QTEST_GUILESS_MAIN(TstBf16GemmCuda)
#include "tst_bf16_gemm_cuda.moc"
