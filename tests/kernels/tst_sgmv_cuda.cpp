// The SGMV LoRA kernels (sgmv_shrink, sgmv_expand, sgmv_expand_swiglu) against their C++ twins on random inputs
// over odd shapes and the segment layouts the runner produces, outputs poisoned with NaN first so unwritten elements
// fail. Tolerances: bf16 outputs rel-L2 1e-2, f32 outputs 1e-5. Label cuda: needs a GPU.
#include <QtTest>
#include <cmath>
#include <memory>
#include <random>

#include "device_buffer.h"
#include "kernel_test_util.h"
#include "launchers.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {
constexpr double kBf16Tol = 1e-2;

// The SGMV tests' segment layouts over slots 1-9 (0: no adapter): "mixed" (segments of 1..733 tokens: the 4-token
// chunked path), "decode4" (the graph path: segments of <= 4 tokens, an empty segment on a real slot, empty slot-0
// tail), anything else one token per adapter (the 1-token path).
struct SgmvSegments {
    std::vector<int32_t> indptr{0}, slot;
    int max_len = 0;
    explicit SgmvSegments(const QString& layout) {
        std::vector<int32_t> len;
        if (layout == "mixed")
            len = {3, 1, 733, 7, 1, 19, 1, 2, 40, 1, 5}, slot = {1, 0, 2, 3, 4, 5, 6, 0, 7, 8, 9};
        else if (layout == "decode4")
            len = {4, 4, 1, 3, 2, 0, 4, 1, 4, 2, 0, 0}, slot = {1, 2, 3, 4, 5, 9, 6, 0, 7, 8, 0, 0};
        else
            len = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, slot = {1, 2, 3, 0, 4, 5, 6, 7, 8, 9};
        for (int l : len) indptr.push_back(indptr.back() + l), max_len = std::max(max_len, l);
    }
    int n_tokens() const { return indptr.back(); }
};

}  // namespace

class TstSgmvCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    // Many distinct adapters per batch, odd ranks (1, 3, 7, 16, 64), base-model segments mixed in, fused
    // slices with gaps between them. Layouts: "mixed" (segments of 1..733 tokens: the 4-token chunked path),
    // "decode4" (the graph path: segments of <= 4 tokens, an empty segment on a real slot, empty slot-0 tail),
    // "decode1" (one token per adapter: the 1-token path). gap 8 + last slice 24 wide keeps every expand slice on
    // the 16-byte path; gap 1 forces the scalar path on slices 2 and 3. in 19 / 733: the scalar shrink path.
    void sgmv_data() {
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("n_slices");
        QTest::addColumn<int>("gap");
        QTest::addColumn<int>("last_out");
        QTest::addColumn<QString>("layout");
        QTest::newRow("qkv 1024") << 1024 << 3 << 1 << 19 << "mixed";
        QTest::newRow("qkv 1024 vec") << 1024 << 3 << 8 << 24 << "mixed";
        QTest::newRow("qkv 1024 decode4") << 1024 << 3 << 8 << 24 << "decode4";
        QTest::newRow("qkv 1024 decode1") << 1024 << 3 << 8 << 24 << "decode1";
        QTest::newRow("down 4096 decode1") << 4096 << 1 << 8 << 24 << "decode1";
        QTest::newRow("gate/up 19") << 19 << 2 << 1 << 19 << "mixed";
        QTest::newRow("gate/up 19 decode4") << 19 << 2 << 1 << 19 << "decode4";
        QTest::newRow("down 733") << 733 << 1 << 1 << 19 << "mixed";
        QTest::newRow("down 733 decode1") << 733 << 1 << 1 << 19 << "decode1";
    }
    void sgmv() {
        QFETCH(int, in);
        QFETCH(int, n_slices);
        QFETCH(int, gap);
        QFETCH(int, last_out);
        QFETCH(QString, layout);
        std::mt19937 rng(in * 3 + n_slices + gap);
        const int n_slots = 9, max_rank = 64;
        const int outs[3] = {1024, 256, last_out};
        std::vector<int32_t> ranks{0, 1, 3, 7, 16, 64, 8, 5, 2, 33};
        std::vector<float> scales{0, 2.0f, 0.5f, 1.0f, 0.125f, 0.25f, 4.0f, 1.5f, 3.0f, 0.75f};
        const SgmvSegments segs(layout);
        const std::vector<int32_t>&seg_indptr = segs.indptr, &seg_slot = segs.slot;
        const int n = segs.n_tokens(), max_seg_len = segs.max_len;
        int y_cols = 0, offsets[3];
        for (int j = 0; j < n_slices; ++j) offsets[j] = y_cols, y_cols += outs[j] + gap;  // untouched gap columns
        const int64_t slot_stride = int64_t(max_rank) * std::max(in, 1024);
        std::vector<std::vector<uint16_t>> a, bt;
        for (int j = 0; j < n_slices; ++j)
            a.push_back(random_bf16(rng, n_slots * slot_stride)), bt.push_back(random_bf16(rng, n_slots * slot_stride));
        auto x = random_bf16(rng, std::size_t(n) * in);
        auto y = random_bf16(rng, std::size_t(n) * y_cols, -4.0f, 4.0f);
        std::vector<float> xa(std::size_t(n) * n_slices * max_rank, 0.0f);
        DeviceBuffer<uint16_t> d_x(x), d_y(y);
        DeviceBuffer<float> d_xa(std::vector<float>(xa.size(), NAN));  // unwritten entries that get read show up
        DeviceBuffer<int32_t> d_ranks(ranks), d_segp(seg_indptr), d_segs(seg_slot);
        DeviceBuffer<float> d_scales(scales);
        std::vector<std::unique_ptr<DeviceBuffer<uint16_t>>> d_a, d_bt;
        SgmvParams p;
        p.x = x.data(), p.x_row_stride = in, p.in_features = in, p.xa = xa.data(), p.y = y.data(),
        p.y_row_stride = y_cols;
        p.seg_indptr = seg_indptr.data(), p.seg_slot = seg_slot.data(), p.n_segs = int(seg_slot.size());
        p.max_seg_len = max_seg_len, p.max_rank = max_rank, p.slot_stride = slot_stride, p.n_slices = n_slices;
        SgmvParams d = p;
        d.x = d_x.get(), d.xa = d_xa.get(), d.y = d_y.get(), d.seg_indptr = d_segp.get(), d.seg_slot = d_segs.get();
        for (int j = 0; j < n_slices; ++j) {
            d_a.push_back(std::make_unique<DeviceBuffer<uint16_t>>(a[j]));
            d_bt.push_back(std::make_unique<DeviceBuffer<uint16_t>>(bt[j]));
            p.slices[j] = {a[j].data(), bt[j].data(), ranks.data(), scales.data(), offsets[j], outs[j]};
            d.slices[j] = {d_a[j]->get(), d_bt[j]->get(), d_ranks.get(), d_scales.get(), offsets[j], outs[j]};
        }
        ref::sgmv_shrink(p);
        ref::sgmv_expand(p);
        sync_check(sgmv_shrink(d, nullptr));
        sync_check(sgmv_expand(d, nullptr));
        // xa: compare only entries within each token's real rank (the rest is never written or read).
        auto got_xa = d_xa.download();
        std::vector<float> gx, ex;
        QString worst_xa;
        double worst_xa_diff = -1;
        for (std::size_t s = 0; s < seg_slot.size(); ++s)
            for (int t = seg_indptr[s]; t < seg_indptr[s + 1]; ++t)
                for (int j = 0; j < n_slices; ++j)
                    for (int r = 0; r < ranks[seg_slot[s]]; ++r) {
                        std::size_t i = std::size_t(t) * n_slices * max_rank + j * max_rank + r;
                        gx.push_back(got_xa[i]), ex.push_back(xa[i]);
                        double diff = std::fabs(double(got_xa[i]) - xa[i]);
                        if (!(diff <= worst_xa_diff))
                            worst_xa_diff = diff,
                            worst_xa = QString("token %1 slice %2 rank row %3 (segment %4, slot %5): got %6 want %7")
                                           .arg(t)
                                           .arg(j)
                                           .arg(r)
                                           .arg(s)
                                           .arg(seg_slot[s])
                                           .arg(got_xa[i])
                                           .arg(xa[i]);
                    }
        const double xa_err = rel_l2(gx, ex);
        QVERIFY2(xa_err < 1e-5, qPrintable(QString("xa rel L2 %1, worst at %2").arg(xa_err).arg(worst_xa)));
        auto got_y = d_y.download();
        const double y_err = rel_l2(to_f32(got_y), to_f32(y));
        std::size_t worst = 0;
        for (std::size_t i = 0; i < got_y.size(); ++i)
            if (!(std::fabs(ref::bf16_to_f32(got_y[i]) - ref::bf16_to_f32(y[i])) <=
                  std::fabs(ref::bf16_to_f32(got_y[worst]) - ref::bf16_to_f32(y[worst]))))
                worst = i;
        QVERIFY2(y_err < kBf16Tol, qPrintable(QString("y rel L2 %1, worst at token %2 column %3: got %4 want %5")
                                                  .arg(y_err)
                                                  .arg(worst / y_cols)
                                                  .arg(worst % y_cols)
                                                  .arg(ref::bf16_to_f32(got_y[worst]))
                                                  .arg(ref::bf16_to_f32(y[worst]))));
        for (int t = 0; t < n; ++t)  // the gap columns are never touched
            for (int j = 0; j < n_slices; ++j)
                for (int g = 0; g < gap; ++g) {
                    std::size_t i = std::size_t(t) * y_cols + offsets[j] + outs[j] + g;
                    QVERIFY2(
                        got_y[i] == y[i],
                        qPrintable(QString("gap column %1 of token %2 changed").arg(offsets[j] + outs[j] + g).arg(t)));
                }

        // The expand into a pending delta (xa as the shrink left it): every slice column of every token written, zero
        // without an adapter, y untouched.
        std::vector<float> delta(std::size_t(n) * y_cols, 0.0f);
        p.delta = delta.data();
        ref::sgmv_expand(p);
        DeviceBuffer<float> d_delta(std::vector<float>(delta.size(), NAN));
        d.delta = d_delta.get();
        sync_check(sgmv_expand(d, nullptr));
        QVERIFY(d_y.download() == got_y);
        auto got_d = d_delta.download();
        std::vector<float> gd, ed;
        for (int t = 0; t < n; ++t)
            for (int j = 0; j < n_slices; ++j)
                for (int c = 0; c < outs[j]; ++c) {
                    const std::size_t i = std::size_t(t) * y_cols + offsets[j] + c;
                    QVERIFY2(!std::isnan(got_d[i]),
                             qPrintable(QString("delta of token %1 column %2 not written").arg(t).arg(offsets[j] + c)));
                    gd.push_back(got_d[i]), ed.push_back(delta[i]);
                }
        const double d_err = rel_l2(gd, ed);
        QVERIFY2(d_err < 1e-4, qPrintable(QString("delta rel L2 %1").arg(d_err)));
    }

    // gate|up's expand with the SwiGLU as its epilogue against sgmv_expand then silu_mul on the device, bit for bit
    // (the runner takes it for granted: tst_cuda_runner compares logits bitwise), and against the reference twin.
    // Gate and up ranks differ per slot (slot 3 has no gate, slot 4 no up); layouts as in sgmv; inter 19: the scalar
    // path. y is never written, and act rows past the segments stay untouched.
    void sgmv_swiglu_data() {
        QTest::addColumn<int>("inter");
        QTest::addColumn<QString>("layout");
        QTest::newRow("1024 decode1") << 1024 << "decode1";
        QTest::newRow("1024 decode4") << 1024 << "decode4";
        QTest::newRow("1024 mixed") << 1024 << "mixed";
        QTest::newRow("19 mixed") << 19 << "mixed";
    }
    void sgmv_swiglu() {
        QFETCH(int, inter);
        QFETCH(QString, layout);
        std::mt19937 rng(uint32_t(inter * 7 + layout.size()));
        const int n_slots = 9, max_rank = 64;
        std::vector<int32_t> ranks_g{0, 1, 3, 0, 16, 64, 8, 5, 2, 33}, ranks_u{0, 2, 16, 7, 0, 64, 8, 1, 20, 33};
        std::vector<float> scales{0, 2.0f, 0.5f, 1.0f, 0.125f, 0.25f, 4.0f, 1.5f, 3.0f, 0.75f};
        const SgmvSegments segs(layout);
        const std::vector<int32_t>&seg_indptr = segs.indptr, &seg_slot = segs.slot;
        const int n = segs.n_tokens(), max_seg_len = segs.max_len;
        const int64_t slot_stride = int64_t(max_rank) * std::max(inter, 1024);
        const auto bt_g = random_bf16(rng, n_slots * slot_stride), bt_u = random_bf16(rng, n_slots * slot_stride);
        auto y = random_bf16(rng, std::size_t(n) * 2 * inter, -4.0f, 4.0f);
        auto xa = random_f32(rng, std::size_t(n) * 2 * max_rank);
        const uint16_t kSentinel = 0x7fc1;  // a bf16 NaN: act rows the kernel must not write
        std::vector<uint16_t> act_want(std::size_t(n + 1) * inter, kSentinel);
        SgmvParams p;
        p.xa = xa.data(), p.y = y.data(), p.y_row_stride = 2 * inter;
        p.seg_indptr = seg_indptr.data(), p.seg_slot = seg_slot.data(), p.n_segs = int(seg_slot.size());
        p.max_seg_len = max_seg_len, p.max_rank = max_rank, p.slot_stride = slot_stride, p.n_slices = 2;
        p.slices[0] = {nullptr, bt_g.data(), ranks_g.data(), scales.data(), 0, inter};
        p.slices[1] = {nullptr, bt_u.data(), ranks_u.data(), scales.data(), inter, inter};
        ref::sgmv_expand_swiglu(p, act_want.data());

        DeviceBuffer<uint16_t> d_y(y), d_y2(y), d_bt_g(bt_g), d_bt_u(bt_u);
        DeviceBuffer<uint16_t> d_act(std::vector<uint16_t>(act_want.size(), kSentinel)), d_act2(act_want);
        DeviceBuffer<float> d_xa(xa), d_scales(scales);
        DeviceBuffer<int32_t> d_ranks_g(ranks_g), d_ranks_u(ranks_u), d_segp(seg_indptr), d_segs(seg_slot);
        SgmvParams d = p;
        d.xa = d_xa.get(), d.y = d_y.get(), d.seg_indptr = d_segp.get(), d.seg_slot = d_segs.get();
        d.slices[0] = {nullptr, d_bt_g.get(), d_ranks_g.get(), d_scales.get(), 0, inter};
        d.slices[1] = {nullptr, d_bt_u.get(), d_ranks_u.get(), d_scales.get(), inter, inter};
        sync_check(sgmv_expand_swiglu(d, d_act.get(), nullptr));
        SgmvParams d2 = d;  // the unfused order, on its own copy of y
        d2.y = d_y2.get();
        sync_check(sgmv_expand(d2, nullptr));
        sync_check(silu_mul(d_y2.get(), nullptr, n, inter, d_act2.get(), nullptr));

        const auto got = d_act.download(), unfused = d_act2.download();
        QVERIFY(d_y.download() == y);
        for (int c = 0; c < inter; ++c)
            QVERIFY2(got[std::size_t(n) * inter + c] == kSentinel, "an act row past the segments was written");
        int differ = 0;
        for (std::size_t i = 0; i < std::size_t(n) * inter; ++i) differ += got[i] != unfused[i];
        QVERIFY2(differ == 0, qPrintable(QString("%1 of %2 act values differ from sgmv_expand + silu_mul")
                                             .arg(differ)
                                             .arg(std::size_t(n) * inter)));
        const std::vector<uint16_t> got_rows(got.begin(), got.begin() + std::ptrdiff_t(n) * inter),
            want_rows(act_want.begin(), act_want.begin() + std::ptrdiff_t(n) * inter);
        const double err = rel_l2(to_f32(got_rows), to_f32(want_rows));
        QVERIFY2(err < kBf16Tol, qPrintable(QString("act rel L2 %1 against the reference twin").arg(err)));
        // Shapes it does not take: a third slice, a delta.
        SgmvParams bad = d;
        bad.n_slices = 3;
        QCOMPARE(sgmv_expand_swiglu(bad, d_act.get(), nullptr), cudaErrorInvalidValue);
        bad = d;
        bad.delta = d_xa.get();
        QCOMPARE(sgmv_expand_swiglu(bad, d_act.get(), nullptr), cudaErrorInvalidValue);
    }
};

QTEST_GUILESS_MAIN(TstSgmvCuda)
#include "tst_sgmv_cuda.moc"
