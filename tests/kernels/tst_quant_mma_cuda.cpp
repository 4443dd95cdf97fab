// The int4 / fp8 tensor-core GEMM (kernels/quant_mma.cu) against its twin (ref::quant_mma: weights rounded as the
// kernel rounds them, a double-precision dot) and against the exact-weight twin (ref::quant_gemv) within the
// bf16 bound: AWQ and GPTQ (v1 / v2 zeros), groups of 32 / 64 / 128, fp8 per tensor / channel / 128-block
// (and all-subnormal e4m3 weights), widths that leave warps and tiles partly
// empty, 1 to 32 tokens (token tiles partly filled), forced split-K chunks, padded x / y rows and a bias. Each
// case runs twice on one workspace, whose counters must come back zeroed, and gives the same bits both times;
// identical x rows give identical y rows. Then the fused LoRA expand against the twin's epilogue, and the shapes
// the kernel must refuse. Label cuda.
#include <QtTest>
#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "device_buffer.h"
#include "kernel_test_util.h"
#include "quant_case.h"
#include "quant_lora_case.h"
#include "quant_mma.h"
#include "ref/ref_kernels.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

struct Errors {
    double rel_l2, max_abs, max_y;
};

Errors compare(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, int tokens, int n, int64_t ys) {
    std::vector<float> g, w;
    double max_y = 0;
    for (int t = 0; t < tokens; ++t)
        for (int col = 0; col < n; ++col) {
            const std::size_t i = std::size_t(t) * std::size_t(ys) + std::size_t(col);
            g.push_back(ref::bf16_to_f32(got[i])), w.push_back(ref::bf16_to_f32(want[i]));
            max_y = std::max(max_y, double(std::fabs(w.back())));
        }
    return {rel_l2(g, w), max_abs_diff(g, w), max_y};
}

// What both LoRA tests build: a quantized matrix that is a whole 256-column site or its middle slice (k 512), x, the
// LoRA case (with each slice's A when shrink), a bias, the twin's y (the twin shrinks first when shrink), the
// device copies, and the parameters of the launch over tokens t0 .. t0 + 7 as the runner would pass them.
struct MmaLoraSetup {
    static constexpr int k = 512;
    int n, lora_col, tokens, chunk;
    QuantCase c;
    std::mt19937 rng;
    std::vector<uint16_t> x;
    QuantLoraCase lc;
    std::vector<uint16_t> b, want;
    QuantGemvParams hp;
    DeviceBuffer<uint16_t> dx, db, dy, ds;
    DeviceBuffer<int32_t> dqw, dqz;
    DeviceBuffer<uint8_t> dw8, dws;
    DeviceBuffer<float> dsc;

    template <class V>
    static V nonempty(V v) {
        return v.empty() ? V(1) : v;
    }

    MmaLoraSetup(int format, bool whole_site, int tokens_, bool base_first, int chunk_, uint32_t seed, bool shrink)
        : n(whole_site ? QuantLoraCase::kSiteColumns : 128),
          lora_col(whole_site ? 0 : 64),
          tokens(tokens_),
          chunk(chunk_),
          c(QuantFormat(format), n, k, 128, false, false, Fp8Scaling::block128, uint32_t(n + tokens)),
          rng(seed),
          x(random_bf16(rng, std::size_t(tokens) * k)),
          lc(rng, tokens, base_first, shrink ? k : 0),
          b(random_bf16(rng, std::size_t(n))),
          want(std::size_t(tokens) * n),
          hp(c.params(x.data(), k, want.data(), n, tokens, c.qweight.data(), c.qzeros.data(), c.s16.data(), nullptr,
                      c.w8.data(), c.w_scale.data(), nullptr)),
          dx(x),
          db(b),
          dy(std::vector<uint16_t>(want.size(), 0x7fc1)),
          ds(nonempty(c.s16)),
          dqw(nonempty(c.qweight)),
          dqz(nonempty(c.qzeros)),
          dw8(nonempty(c.w8)),
          dws(std::vector<uint8_t>(quant_mma_workspace_bytes(n, k, chunk), 0)),
          dsc(nonempty(c.w_scale)) {
        hp.bias = b.data(), hp.lora_expand = true, hp.lora_shrink = shrink, hp.lora = lc.params(false);
        hp.lora_col = lora_col;
        ref::quant_mma(hp);  // with shrink, writes lc.xa from x and A first
    }

    QuantGemvParams launch(int t0) const {
        QuantGemvParams p = c.params(dx.get() + int64_t(t0) * k, k, dy.get() + int64_t(t0) * n, n,
                                     std::min(tokens - t0, kQuantMmaMaxLoraTokens), dqw.get(), dqz.get(), ds.get(),
                                     nullptr, dw8.get(), dsc.get(), dws.get());
        p.split_chunk = chunk, p.bias = db.get(), p.lora_expand = true, p.lora = lc.params(true);
        p.lora_col = lora_col, p.lora_token0 = t0;
        return p;
    }

    // y against the twin, and the split-K counters back at zero.
    void check(const std::vector<uint16_t>& got) const {
        const Errors e = compare(got, want, tokens, n, n);
        QVERIFY2(e.rel_l2 < 1e-3 && e.max_abs <= e.max_y / 128,
                 qPrintable(QString("vs twin: rel l2 %1, max abs err %2").arg(e.rel_l2).arg(e.max_abs)));
        const auto ws = dws.download();
        for (std::size_t i = 0; i < kQuantGemvCounterBytes; ++i)
            if (ws[i]) QFAIL("the workspace's counters are not zero after the launches");
    }
};

}  // namespace

class TstQuantMmaCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void quant_mma_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("group");
        QTest::addColumn<bool>("zero_plus_one");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("chunk");  // split-K rows per block, 0 = the launcher's choice
        QTest::addColumn<bool>("bias");
        QTest::addColumn<int>("col_groups");  // 64-column groups per block, 0 = the launcher's choice
        QTest::addColumn<int>("scaling");     // fp8
        QTest::addColumn<bool>("subnormal");  // fp8: every weight an e4m3 subnormal
        const std::vector<std::pair<int, int>> shapes{{8, 128},    {24, 256},    {56, 384},   {152, 1024},
                                                      {776, 4096}, {1024, 4096}, {4104, 512}, {264, 12288}};
        for (int t : {1, 5, 8, 9, 17, 32}) {
            for (auto [n, k] : shapes) {
                const bool bias = (n + t) % 3 == 0;
                QTest::newRow(qPrintable(QString("awq %1x%2 t%3").arg(n).arg(k).arg(t)))
                    << int(QuantFormat::awq_int4) << n << k << 128 << false << t << 0 << bias << 0 << 0 << false;
                QTest::newRow(qPrintable(QString("gptq %1x%2 t%3").arg(n).arg(k).arg(t)))
                    << int(QuantFormat::gptq_int4) << n << k << 128 << (n % 16 == 8) << t << 0 << !bias << 0 << 0
                    << false;
            }
            QTest::newRow(qPrintable(QString("awq 40x320 g64 t%1").arg(t)))
                << int(QuantFormat::awq_int4) << 40 << 320 << 64 << false << t << 0 << true << 0 << 0 << false;
            QTest::newRow(qPrintable(QString("gptq 48x2048 g32 t%1").arg(t)))
                << int(QuantFormat::gptq_int4) << 48 << 2048 << 32 << true << t << 0 << false << 0 << 0 << false;
            for (auto [n, k] : std::vector<std::pair<int, int>>{{8, 128}, {136, 384}, {1032, 4096}, {264, 12288}})
                for (Fp8Scaling sc : {Fp8Scaling::per_tensor, Fp8Scaling::per_channel, Fp8Scaling::block128})
                    QTest::newRow(qPrintable(QString("fp8 %1x%2 scaling%3 t%4").arg(n).arg(k).arg(int(sc)).arg(t)))
                        << int(QuantFormat::fp8_e4m3) << n << k << 128 << false << t << 0 << (n % 16 == 8) << 0
                        << int(sc) << false;
            QTest::newRow(qPrintable(QString("fp8 subnormal 264x1024 t%1").arg(t)))
                << int(QuantFormat::fp8_e4m3) << 264 << 1024 << 128 << false << t << 0 << false << 0
                << int(Fp8Scaling::per_channel) << true;
            for (int cg : {1, 2, 4})
                for (int chunk : {0, 32, 96, 1024}) {
                    QTest::newRow(qPrintable(QString("awq 1024x4096 cg%1 chunk%2 t%3").arg(cg).arg(chunk).arg(t)))
                        << int(QuantFormat::awq_int4) << 1024 << 4096 << 128 << false << t << chunk << false << cg << 0
                        << false;
                    QTest::newRow(qPrintable(QString("gptq 264x4096 cg%1 chunk%2 t%3").arg(cg).arg(chunk).arg(t)))
                        << int(QuantFormat::gptq_int4) << 264 << 4096 << 128 << true << t << chunk << true << cg << 0
                        << false;
                }
        }
    }

    void quant_mma() {
        QFETCH(int, format);
        QFETCH(int, n);
        QFETCH(int, k);
        QFETCH(int, group);
        QFETCH(bool, zero_plus_one);
        QFETCH(int, tokens);
        QFETCH(int, chunk);
        QFETCH(bool, bias);
        QFETCH(int, col_groups);
        QFETCH(int, scaling);
        QFETCH(bool, subnormal);
        const uint32_t seed = uint32_t(n * 131 + k + tokens * 7 + format * 1000 + chunk + scaling * 17);
        QuantCase c(QuantFormat(format), n, k, group, false, zero_plus_one, Fp8Scaling(scaling), seed);
        if (subnormal) {  // sign and mantissa random, exponent 0: bf16 subnormals inside the kernel
            std::mt19937 r(seed);
            for (auto& b : c.w8) b = uint8_t((r() & 0x87u) | 1u);
            for (auto& v : c.w_scale) v = 64.f;
        }
        std::mt19937 rng(seed);
        const int64_t xs = k + 24, ys = n + 6;  // padded rows; y's padding must stay poisoned
        auto x = random_bf16(rng, std::size_t(tokens) * std::size_t(xs));
        const auto b = random_bf16(rng, std::size_t(n));
        std::vector<uint16_t> want(std::size_t(tokens) * std::size_t(ys), 0x7fc1), exact(want);
        QuantGemvParams hp = c.params(x.data(), xs, want.data(), ys, tokens, c.qweight.data(), c.qzeros.data(),
                                      c.s16.data(), nullptr, c.w8.data(), c.w_scale.data(), nullptr);
        hp.bias = bias ? b.data() : nullptr;
        ref::quant_mma(hp);
        hp.y = exact.data();
        ref::quant_gemv(hp);

        auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
        DeviceBuffer<uint16_t> dx(x), db(b), dy(std::vector<uint16_t>(want.size(), 0x7fc1)), ds(nonempty(c.s16));
        DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros));
        DeviceBuffer<uint8_t> dw8(nonempty(c.w8));
        DeviceBuffer<float> dsc(nonempty(c.w_scale));
        const std::size_t ws_bytes = quant_mma_workspace_bytes(n, k, chunk);
        DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(ws_bytes, 0));
        QuantGemvParams p = c.params(dx.get(), xs, dy.get(), ys, tokens, dqw.get(), dqz.get(), ds.get(), nullptr,
                                     dw8.get(), dsc.get(), dws.get());
        p.split_chunk = chunk, p.mma_col_groups = col_groups, p.bias = bias ? db.get() : nullptr;
        QVERIFY(quant_mma_supported(p));
        std::vector<uint16_t> first;
        for (int run = 0; run < 2; ++run) {
            cuda_check(loradesk::kernels::quant_mma(p, nullptr), "quant_mma launch");
            cuda_check(cudaDeviceSynchronize(), "quant_mma");
            const auto got = dy.download();
            if (run == 0) first = got;
            QVERIFY2(got == first, "a second run gave other bits: the split-K reduction must not depend on timing");
            for (int t = 0; t < tokens; ++t)
                for (int64_t col = n; col < ys; ++col)
                    QVERIFY2(got[std::size_t(t * ys + col)] == 0x7fc1, "quant_mma wrote past the row's columns");
            // Same rounded weights: only f32 summation order and the final rounding differ.
            const Errors e = compare(got, want, tokens, n, ys);
            // Exact weights: the bf16 rounding of each weight and of its scale adds a bf16-sized error.
            const Errors ex = compare(got, exact, tokens, n, ys);
            if (run == 0)
                qInfo("vs twin: rel l2 %.2e, max abs %.3g; vs exact weights: rel l2 %.2e (max |y| %.3g)", e.rel_l2,
                      e.max_abs, ex.rel_l2, e.max_y);
            QVERIFY2(
                e.rel_l2 < 1e-3 && e.max_abs <= e.max_y / 128,
                qPrintable(QString("run %1 vs twin: rel l2 %2, max abs err %3").arg(run).arg(e.rel_l2).arg(e.max_abs)));
            QVERIFY2(ex.rel_l2 < 1e-2, qPrintable(QString("vs exact weights: rel l2 %1").arg(ex.rel_l2)));
            const auto ws = dws.download();
            for (std::size_t i = 0; i < kQuantGemvCounterBytes; ++i)
                if (ws[i]) QFAIL("the workspace's counters are not zero after the launch");
        }
        if (tokens > 1) {  // the same x in every row: identical rows (batch invariance)
            DeviceBuffer<uint16_t> dsame(repeat_first_row(x, tokens, xs));
            QuantGemvParams same = p;
            same.x = dsame.get();
            cuda_check(loradesk::kernels::quant_mma(same, nullptr), "quant_mma launch");
            cuda_check(cudaDeviceSynchronize(), "quant_mma");
            const auto [row, col] = first_row_difference(dy.download(), tokens, n, ys);
            if (row >= 0)
                QFAIL(qPrintable(QString("row %1 differs from row 0 at column %2 for the same x").arg(row).arg(col)));
        }
    }

    // The fused LoRA expand (quant_gemv's epilogue case, quant_lora_case.h): a matrix that is the whole site or its
    // middle slice, tokens on adapters and on the base, split-K from one split (the last block adds every rank) to
    // more splits than ranks (each block a share, some none), and a step of 13 tokens in launches of at most 8, the
    // most a LoRA launch takes (rows 0-7, then rows 8-12 with lora_token0 8). x_before_wait changes only when the
    // kernel waits: same bits.
    void quant_mma_lora_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("whole_site");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<bool>("base_first");
        QTest::addColumn<int>("chunk");
        int i = 0;
        for (int f : {int(QuantFormat::awq_int4), int(QuantFormat::gptq_int4), int(QuantFormat::fp8_e4m3)})
            for (bool whole : {true, false})
                for (int t : {1, 2, 4, 8, 13})
                    for (bool base_first : {false, true}) {
                        if (t == 1 && base_first) continue;
                        const int chunk = std::array<int, 3>{0, 32, 512}[std::size_t(i++ % 3)];
                        QTest::newRow(qPrintable(QString("format%1 %2 t%3%4 chunk%5")
                                                     .arg(f)
                                                     .arg(whole ? "site" : "middle")
                                                     .arg(t)
                                                     .arg(base_first ? " base-first" : "")
                                                     .arg(chunk)))
                            << f << whole << t << base_first << chunk;
                    }
    }

    void quant_mma_lora() {
        QFETCH(int, format);
        QFETCH(bool, whole_site);
        QFETCH(int, tokens);
        QFETCH(bool, base_first);
        QFETCH(int, chunk);
        MmaLoraSetup m(format, whole_site, tokens, base_first, chunk, uint32_t(29 + tokens + format), false);
        std::vector<uint16_t> first;
        for (bool early : {false, true}) {
            for (int t0 = 0; t0 < tokens; t0 += kQuantMmaMaxLoraTokens) {
                QuantGemvParams p = m.launch(t0);
                p.x_before_wait = early;
                QVERIFY(quant_mma_supported(p));
                cuda_check(loradesk::kernels::quant_mma(p, nullptr), "quant_mma launch");
            }
            cuda_check(cudaDeviceSynchronize(), "quant_mma");
            const auto got = m.dy.download();
            if (!early) first = got;
            QVERIFY2(got == first, "x_before_wait gave other bits");
        }
        double max_epilogue = 0;
        for (int t = 0; t < tokens; ++t)
            for (int col = 0; col < m.n; ++col)
                max_epilogue = std::max(max_epilogue, std::fabs(ref::quant_epilogue(m.hp, t, col)));
        QVERIFY2(max_epilogue > 1.0, "the case must exercise the epilogue");
        m.check(first);
    }

    // The shrink in the same launch (lora_shrink): the xa it writes against the twin's shrink, and y against the
    // twin, for the same sites, token counts (13: two launches, each shrinking its own tokens with its own counters)
    // and splits as above. Every row runs twice, the second time with the blocks in reverse order, so that the blocks
    // streaming weights reach their epilogue before any shrink block has run and must take the shrink's units
    // themselves (lora_handover.cuh): the same bits either way, and the counters of every launch end at its units.
    void quant_mma_fused_shrink_data() { quant_mma_lora_data(); }

    void quant_mma_fused_shrink() {
        QFETCH(int, format);
        QFETCH(bool, whole_site);
        QFETCH(int, tokens);
        QFETCH(bool, base_first);
        QFETCH(int, chunk);
        MmaLoraSetup m(format, whole_site, tokens, base_first, chunk, uint32_t(31 + tokens + format), true);
        const int launches = (tokens + kQuantMmaMaxLoraTokens - 1) / kQuantMmaMaxLoraTokens;
        std::vector<uint16_t> first;
        for (bool reverse : {false, true}) {
            DeviceBuffer<int32_t> sync(std::vector<int32_t>(std::size_t(2 * launches), 0));
            std::vector<int32_t> units;
            for (int t0 = 0; t0 < tokens; t0 += kQuantMmaMaxLoraTokens) {
                QuantGemvParams p = m.launch(t0);
                p.lora_shrink = true, p.reverse_block_order = reverse;
                p.lora_sync = sync.get() + 2 * (t0 / kQuantMmaMaxLoraTokens);
                QVERIFY(quant_mma_supported(p));
                cuda_check(loradesk::kernels::quant_mma(p, nullptr), "quant_mma launch");
                units.push_back((p.n_tokens * 3 * QuantLoraCase::kMaxRank + 3) / 4);  // a row per warp, 4 warps
            }
            cuda_check(cudaDeviceSynchronize(), "quant_mma");
            const auto got = m.dy.download();
            if (!reverse) first = got;
            QVERIFY2(got == first, "the reverse block order gave other bits");
            const auto counters = sync.download();
            for (int i = 0; i < launches; ++i)
                QVERIFY2(counters[std::size_t(2 * i)] == units[std::size_t(i)] &&
                             counters[std::size_t(2 * i + 1)] >= units[std::size_t(i)],
                         "every unit claimed and published once");
        }
        // xa where the expand reads it (tokens on an adapter, ranks below the slot's) against the twin's shrink.
        const auto xa = m.lc.device_xa();
        const SgmvParams hl = m.lc.params(false);
        int checked = 0;
        for (int t = 0; t < tokens; ++t) {
            int slot = 0;
            for (int g = 0; g < hl.n_segs; ++g)
                if (t >= hl.seg_indptr[g] && t < hl.seg_indptr[g + 1]) slot = hl.seg_slot[g];
            for (int j = 0; slot > 0 && j < 3; ++j)
                for (int r = 0; r < hl.slices[j].ranks[slot]; ++r, ++checked) {
                    const std::size_t i =
                        std::size_t(t * 3 * QuantLoraCase::kMaxRank + j * QuantLoraCase::kMaxRank + r);
                    QVERIFY2(std::fabs(xa[i] - m.lc.xa[i]) <= 1e-4f * (1.f + std::fabs(m.lc.xa[i])),
                             qPrintable(QString("xa[%1] %2, twin %3").arg(i).arg(xa[i]).arg(m.lc.xa[i])));
                }
        }
        QVERIFY(checked > 0);
        m.check(first);
    }

    // What the runner must route elsewhere: act-order, over 32 tokens, odd shapes, a LoRA epilogue without slices.
    void quant_mma_refuses() {
        QuantCase c(QuantFormat::gptq_int4, 64, 256, 128, false, false, Fp8Scaling::block128, 7);
        DeviceBuffer<uint16_t> dx(std::vector<uint16_t>(64 * 256)), dy(std::vector<uint16_t>(64 * 64)), ds(c.s16);
        DeviceBuffer<int32_t> dqw(c.qweight), dqz(c.qzeros), dg(std::vector<int32_t>(256));
        DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(quant_mma_workspace_bytes(64, 256), 0));
        const QuantGemvParams ok = c.params(dx.get(), 256, dy.get(), 64, 32, dqw.get(), dqz.get(), ds.get(), nullptr,
                                            nullptr, nullptr, dws.get());
        QVERIFY(quant_mma_supported(ok));
        auto refused = [&](auto change) {
            QuantGemvParams p = ok;
            change(p);
            return !quant_mma_supported(p) && loradesk::kernels::quant_mma(p, nullptr) == cudaErrorInvalidValue;
        };
        QVERIFY(refused([](QuantGemvParams& p) { p.format = QuantFormat::fp8_e4m3; }));  // no fp8 weights given
        QVERIFY(refused([&](QuantGemvParams& p) { p.g_idx = dg.get(); }));
        QVERIFY(refused([&](QuantGemvParams& p) { p.k_order = dg.get(); }));  // x must be gathered first
        QVERIFY(refused([](QuantGemvParams& p) { p.lora_expand = true, p.lora.n_slices = 0; }));
        QVERIFY(refused([](QuantGemvParams& p) { p.lora_token0 = -1; }));
        QVERIFY(refused([](QuantGemvParams& p) { p.lora_shrink = true; }));  // no expand, slices or counters
        QVERIFY(refused([](QuantGemvParams& p) {  // LoRA is compiled into the kernels of up to 8 tokens only
            p.lora_expand = true, p.lora.n_slices = 1, p.lora.xa = reinterpret_cast<float*>(p.workspace);
            p.n_tokens = kQuantMmaMaxLoraTokens + 1;
        }));
        QVERIFY(refused([](QuantGemvParams& p) { p.n_tokens = kQuantMmaMaxTokens + 1; }));
        QVERIFY(refused([](QuantGemvParams& p) { p.k = 240; }));             // not a multiple of 32
        QVERIFY(refused([](QuantGemvParams& p) { p.group_size = 48; }));     // not a multiple of 32
        QVERIFY(refused([](QuantGemvParams& p) { p.x_row_stride = 260; }));  // x rows not 16-byte aligned
        QVERIFY(refused([](QuantGemvParams& p) { p.split_chunk = 100; }));
        QVERIFY(refused([](QuantGemvParams& p) { p.split_chunk = 2048; }));  // x rows over 64 KiB at 32 tokens
        QVERIFY(refused([](QuantGemvParams& p) { p.mma_col_groups = 3; }));
        QVERIFY(refused([](QuantGemvParams& p) { p.workspace = nullptr; }));
    }
};

QTEST_GUILESS_MAIN(TstQuantMmaCuda)
#include "tst_quant_mma_cuda.moc"
