// The skinny GEMM kernel (kernels/gemv.cu) against its twin: token counts 1-8 (every accumulator width),
// inner sizes that are and are not multiples of a warp's 256-element stride, odd row counts, bias, SwiGLU,
// f32 output, and fused LoRA with several slots of odd ranks, base-model tokens mixed in, 1-3 slices, at small
// and at production sizes (where the 1-token handover loads xa early).
// Each case runs twice on a re-zeroed counter (results must not depend on a previous launch). Label cuda.
#include <QtTest>
#include <cmath>

#include "device_buffer.h"
#include "gemv_case.h"
#include "gemv_device_slices.h"
#include "launchers.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

class TstGemvCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void gemv_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        QTest::addColumn<bool>("swiglu");
        QTest::addColumn<bool>("bias");
        QTest::addColumn<int>("slices");
        QTest::addColumn<bool>("f32");
        for (int n : {1, 2, 3, 4, 5, 8}) {
            QTest::newRow(qPrintable(QString("n%1 plain 4096x1025").arg(n)))
                << n << 4096 << 1025 << false << false << 0 << false;
            QTest::newRow(qPrintable(QString("n%1 qkv lora bias 1032x96").arg(n)))
                << n << 1032 << 96 << false << true << 3 << false;
            QTest::newRow(qPrintable(QString("n%1 swiglu lora 264x130").arg(n)))
                << n << 264 << 130 << true << false << 2 << false;
            QTest::newRow(qPrintable(QString("n%1 down lora 3080x17").arg(n)))
                << n << 3080 << 17 << false << false << 1 << false;
        }
        // Production-sized LoRA sites: hundreds of row blocks, so most of them reach their last iteration after
        // the shrink is published and take the 1-token early handover (xa loaded inside the loop).
        for (int n : {1, 2}) {
            QTest::newRow(qPrintable(QString("n%1 qkv lora bias 4096x6144").arg(n)))
                << n << 4096 << 6144 << false << true << 3 << false;
            QTest::newRow(qPrintable(QString("n%1 swiglu lora 4096x3072").arg(n)))
                << n << 4096 << 2 * 1536 << true << false << 2 << false;
        }
        QTest::newRow("n1 lm_head f32 8x3") << 1 << 8 << 3 << false << false << 0 << true;
        QTest::newRow("n7 f32 2048x333") << 7 << 2048 << 333 << false << true << 0 << true;
        QTest::newRow("n8 swiglu bias 4096x24576") << 8 << 4096 << 2 * 1536 << true << true << 0 << false;
    }
    void gemv() {
        QFETCH(int, n);
        QFETCH(int, in);
        QFETCH(int, out);
        QFETCH(bool, swiglu);
        QFETCH(bool, bias);
        QFETCH(int, slices);
        QFETCH(bool, f32);
        GemvCase c(n, in, out, swiglu, bias, slices, f32, uint32_t(n * 131 + in + out * 7 + slices));
        std::vector<float> y_ref_f32(c.y_elems(), 0.0f);
        std::vector<uint16_t> y_ref_bf16(c.y_elems(), 0);
        std::vector<const uint16_t*> ha, hbt;
        for (int j = 0; j < slices; ++j) ha.push_back(c.a[j].data()), hbt.push_back(c.bt[j].data());
        std::vector<float> xa_ref = c.xa;
        void* y_host = f32 ? static_cast<void*>(y_ref_f32.data()) : static_cast<void*>(y_ref_bf16.data());
        ref::gemv(c.params(c.w.data(), c.x.data(), c.b.data(), y_host, xa_ref.data(), ha, hbt, c.ranks.data(),
                           c.scales.data(), c.seg_indptr.data(), c.seg_slot.data(), nullptr));

        DeviceBuffer<uint16_t> d_w(c.w), d_x(c.x), d_b(c.bias ? c.b : std::vector<uint16_t>(1));
        DeviceBuffer<float> d_yf(std::vector<float>(c.y_elems(), NAN)), d_xa(std::vector<float>(c.xa.size() + 1, NAN));
        DeviceBuffer<uint16_t> d_yb(std::vector<uint16_t>(c.y_elems(), 0x7fc1));
        DeviceBuffer<int32_t> d_ranks(c.ranks), d_segp(c.seg_indptr.empty() ? std::vector<int32_t>{0} : c.seg_indptr),
            d_segs(c.seg_slot.empty() ? std::vector<int32_t>{0} : c.seg_slot), d_sync(std::vector<int32_t>{0, 0});
        DeviceBuffer<float> d_scales(c.scales);
        const DeviceLoraSlices lora(c, slices);
        void* y_dev = f32 ? static_cast<void*>(d_yf.get()) : static_cast<void*>(d_yb.get());
        GemvParams p = c.params(d_w.get(), d_x.get(), d_b.get(), y_dev, d_xa.get(), lora.a, lora.bt, d_ranks.get(),
                                d_scales.get(), d_segp.get(), d_segs.get(), d_sync.get());
        QVERIFY(gemv_supported(p));
        for (int run = 0; run < 2; ++run) {
            d_sync.upload({0, 0});  // the caller zeroes the handshake counter before each launch
            cuda_check(loradesk::kernels::gemv(p, nullptr), "gemv launch");
            cuda_check(cudaDeviceSynchronize(), "gemv");
            QCOMPARE(d_sync.download()[0] > 0, slices > 0);  // the producer blocks counted themselves
            // Compare only the written columns: the 3 padding columns of each y row stay poisoned.
            const int cols = c.out_cols(), stride = cols + 3;
            std::vector<float> got, want;
            auto yf = d_yf.download();
            auto yb = d_yb.download();
            for (int t = 0; t < n; ++t)
                for (int col = 0; col < stride; ++col) {
                    const std::size_t i = std::size_t(t) * stride + col;
                    const float g = f32 ? yf[i] : ref::bf16_to_f32(yb[i]);
                    if (col >= cols) {
                        QVERIFY2(std::isnan(g), "gemv wrote past the row's columns");
                        continue;
                    }
                    got.push_back(g);
                    want.push_back(f32 ? y_ref_f32[i] : ref::bf16_to_f32(y_ref_bf16[i]));
                }
            const double err = rel_l2(got, want);
            QVERIFY2(err < (f32 ? 1e-5 : 4e-3), qPrintable(QString("run %1: rel err %2").arg(run).arg(err)));
        }
    }

    void unsupported_shapes_are_refused() {
        GemvParams p;
        p.n_tokens = 9, p.in = 8, p.out_rows = 1, p.x_row_stride = 8;
        QCOMPARE(loradesk::kernels::gemv(p, nullptr), cudaErrorInvalidValue);  // too many tokens, null pointers
        QVERIFY(!gemv_supported(p));
    }
};

QTEST_GUILESS_MAIN(TstGemvCuda)
#include "tst_gemv_cuda.moc"
