// The skinny GEMM's twin (ref::gemv) against the unfused pipeline it replaces in the runner: a plain
// product rounded to bf16, bias_add, sgmv_shrink + sgmv_expand, then silu_mul — the same maths with more
// roundings, so they agree to bf16 precision. Keeps the twin honest, since it is the oracle of the kernel.
#include <QtTest>

#include "gemv_case.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

class TstGemvTwin : public QObject {
    Q_OBJECT
  private slots:
    void matches_unfused_pipeline_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<bool>("swiglu");
        QTest::addColumn<bool>("bias");
        QTest::addColumn<int>("slices");
        QTest::newRow("plain") << 3 << false << false << 0;
        QTest::newRow("qkv bias lora") << 5 << false << true << 3;
        QTest::newRow("gate/up swiglu lora") << 8 << true << false << 2;
        QTest::newRow("swiglu bias") << 1 << true << true << 0;
    }
    void matches_unfused_pipeline() {
        QFETCH(int, n);
        QFETCH(bool, swiglu);
        QFETCH(bool, bias);
        QFETCH(int, slices);
        GemvCase c(n, 264, 66, swiglu, bias, slices, false, 7u + uint32_t(n));
        std::vector<const uint16_t*> a, bt;
        for (int j = 0; j < slices; ++j) a.push_back(c.a[j].data()), bt.push_back(c.bt[j].data());
        std::vector<uint16_t> fused(c.y_elems(), 0);
        std::vector<float> xa = c.xa;
        GemvParams p = c.params(c.w.data(), c.x.data(), c.b.data(), fused.data(), xa.data(), a, bt, c.ranks.data(),
                                c.scales.data(), c.seg_indptr.data(), c.seg_slot.data(), nullptr);
        ref::gemv(p);

        // Unfused: y = bf16(x.w) for all out rows, + bias, + LoRA (SGMV), then SwiGLU.
        std::vector<uint16_t> y(std::size_t(n) * c.out);
        for (int t = 0; t < n; ++t)
            for (int r = 0; r < c.out; ++r) {
                double d = 0;
                for (int k = 0; k < c.in; ++k)
                    d += double(ref::bf16_to_f32(c.x[t * c.x_stride + k])) *
                         ref::bf16_to_f32(c.w[std::size_t(r) * c.in + k]);
                y[std::size_t(t) * c.out + r] = ref::f32_to_bf16(float(d));
            }
        if (bias) ref::bias_add(y.data(), c.out, c.b.data(), n, c.out);
        if (slices) {
            std::vector<float> xa2 = c.xa;
            SgmvParams s = p.sgmv;
            s.xa = xa2.data(), s.y = y.data(), s.y_row_stride = c.out, s.max_seg_len = 2;
            ref::sgmv_shrink(s);
            ref::sgmv_expand(s);
            QCOMPARE(xa2, xa);  // the fused twin publishes the same xa rows
        }
        std::vector<uint16_t> want(std::size_t(n) * c.out_cols());
        if (swiglu)
            ref::silu_mul(y.data(), nullptr, n, c.out / 2, want.data());
        else
            want = y;
        std::vector<float> got_f, want_f;
        for (int t = 0; t < n; ++t)
            for (int col = 0; col < c.out_cols(); ++col) {
                got_f.push_back(ref::bf16_to_f32(fused[std::size_t(t) * (c.out_cols() + 3) + col]));
                want_f.push_back(ref::bf16_to_f32(want[std::size_t(t) * c.out_cols() + col]));
            }
        const double err = rel_l2(got_f, want_f);
        QVERIFY2(err < 1e-2, qPrintable(QString("rel err %1").arg(err)));
    }
};

QTEST_GUILESS_MAIN(TstGemvTwin)
#include "tst_gemv_twin.moc"
