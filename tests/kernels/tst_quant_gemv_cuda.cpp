// The quantized GEMV (kernels/quant_gemv.cu) against its twin: AWQ and GPTQ int4 (v1/v2 zeros, act-order
// g_idx permutations, groups of 32/64/128) and fp8 (per-tensor, per-channel, 128x128 blocks) over odd shapes,
// 1 to 4 tokens, padded x / y rows. Each case runs twice on one workspace, whose counters must come back zeroed,
// and gives the same bits both times; identical x rows give identical y rows. Then the fused epilogue, and the fp8
// kernel's shrink in its own launch. Label cuda.
#include <QtTest>
#include <cmath>
#include <memory>

#include "device_buffer.h"
#include "kernel_test_util.h"
#include "quant_case.h"
#include "quant_dequant.h"
#include "quant_gemv.h"
#include "quant_lora_case.h"
#include "ref/ref_kernels.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

class TstQuantGemvCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void quant_gemv_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("group");
        QTest::addColumn<bool>("act_order");
        QTest::addColumn<bool>("zero_plus_one");
        QTest::addColumn<int>("scaling");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("chunk");  // split-K rows per block, 0 = the launcher's choice
        const std::vector<std::pair<int, int>> int4_shapes{{8, 128},    {24, 256},    {56, 384},    {152, 1024},
                                                           {776, 4096}, {1024, 4096}, {4104, 1536}, {264, 12288}};
        const std::vector<std::pair<int, int>> fp8_shapes{{1, 128},   {3, 256},    {7, 384},
                                                          {19, 1024}, {129, 4096}, {1031, 12288}};
        for (int t : {1, 2, 3, 4}) {
            for (auto [n, k] : int4_shapes) {
                QTest::newRow(qPrintable(QString("awq %1x%2 t%3").arg(n).arg(k).arg(t)))
                    << int(QuantFormat::awq_int4) << n << k << 128 << false << false << 0 << t << 0;
                for (bool act : {false, true})
                    QTest::newRow(
                        qPrintable(QString("gptq %1x%2 %3 t%4").arg(n).arg(k).arg(act ? "act" : "seq").arg(t)))
                        << int(QuantFormat::gptq_int4) << n << k << 128 << act << (n % 16 == 8) << 0 << t << 0;
            }
            QTest::newRow(qPrintable(QString("awq 40x320 g64 t%1").arg(t)))
                << int(QuantFormat::awq_int4) << 40 << 320 << 64 << false << false << 0 << t << 0;
            QTest::newRow(qPrintable(QString("gptq 48x2048 g32 act t%1").arg(t)))
                << int(QuantFormat::gptq_int4) << 48 << 2048 << 32 << true << true << 0 << t << 0;
            QTest::newRow(qPrintable(QString("gptq 48x2048 g32 seq t%1").arg(t)))
                << int(QuantFormat::gptq_int4) << 48 << 2048 << 32 << false << false << 0 << t << 0;
            for (int chunk : {128, 1024}) {
                QTest::newRow(qPrintable(QString("awq 1024x4096 chunk%1 t%2").arg(chunk).arg(t)))
                    << int(QuantFormat::awq_int4) << 1024 << 4096 << 128 << false << false << 0 << t << chunk;
                QTest::newRow(qPrintable(QString("gptq 776x4096 act chunk%1 t%2").arg(chunk).arg(t)))
                    << int(QuantFormat::gptq_int4) << 776 << 4096 << 128 << true << false << 0 << t << chunk;
                QTest::newRow(qPrintable(QString("gptq 264x12288 seq chunk%1 t%2").arg(chunk).arg(t)))
                    << int(QuantFormat::gptq_int4) << 264 << 12288 << 128 << false << true << 0 << t << chunk;
            }
            for (auto [n, k] : fp8_shapes)
                for (Fp8Scaling s : {Fp8Scaling::per_tensor, Fp8Scaling::per_channel, Fp8Scaling::block128})
                    QTest::newRow(qPrintable(QString("fp8 %1x%2 scaling%3 t%4").arg(n).arg(k).arg(int(s)).arg(t)))
                        << int(QuantFormat::fp8_e4m3) << n << k << 128 << false << false << int(s) << t << 0;
        }
    }

    void quant_gemv() {
        QFETCH(int, format);
        QFETCH(int, n);
        QFETCH(int, k);
        QFETCH(int, group);
        QFETCH(bool, act_order);
        QFETCH(bool, zero_plus_one);
        QFETCH(int, scaling);
        QFETCH(int, tokens);
        QFETCH(int, chunk);
        const uint32_t seed = uint32_t(n * 131 + k + tokens * 7 + format * 1000 + act_order);
        QuantCase c(QuantFormat(format), n, k, group, act_order, zero_plus_one, Fp8Scaling(scaling), seed);
        std::mt19937 rng(seed);
        const int64_t xs = k + 16, ys = n + 5;  // padded rows; y's padding must stay poisoned
        auto x = random_bf16(rng, std::size_t(tokens) * xs);
        std::vector<uint16_t> want(std::size_t(tokens) * ys, 0x7fc1);
        ref::quant_gemv(c.params(x.data(), xs, want.data(), ys, tokens, c.qweight.data(), c.qzeros.data(), c.s16.data(),
                                 c.g_idx.data(), c.w8.data(), c.w_scale.data(), nullptr));

        auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
        DeviceBuffer<uint16_t> dx(x), dy(std::vector<uint16_t>(want.size(), 0x7fc1)), ds(nonempty(c.s16));
        DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros)), dg(nonempty(c.g_idx));
        DeviceBuffer<uint8_t> dw8(nonempty(c.w8)),
            dws(std::vector<uint8_t>(quant_gemv_workspace_bytes(n, k, group), 0));
        DeviceBuffer<float> dsc(nonempty(c.w_scale));
        QuantGemvParams p = c.params(dx.get(), xs, dy.get(), ys, tokens, dqw.get(), dqz.get(), ds.get(), dg.get(),
                                     dw8.get(), dsc.get(), dws.get());
        p.split_chunk = chunk;
        QVERIFY(quant_gemv_supported(p));
        std::vector<uint16_t> first;
        for (int run = 0; run < 2; ++run) {
            cuda_check(loradesk::kernels::quant_gemv(p, nullptr), "quant_gemv launch");
            cuda_check(cudaDeviceSynchronize(), "quant_gemv");
            const auto got = dy.download();
            if (run == 0) first = got;
            QVERIFY2(got == first, "a second run gave other bits: the split-K reduction must not depend on timing");
            std::vector<float> g, w;
            double max_y = 0;
            for (int t = 0; t < tokens; ++t)
                for (int col = 0; col < ys; ++col) {
                    const std::size_t i = std::size_t(t) * ys + col;
                    if (col >= n) {
                        QVERIFY2(got[i] == 0x7fc1, "quant_gemv wrote past the row's columns");
                        continue;
                    }
                    g.push_back(ref::bf16_to_f32(got[i])), w.push_back(ref::bf16_to_f32(want[i]));
                    max_y = std::max(max_y, double(std::fabs(w.back())));
                }
            const double err = rel_l2(g, w), max_err = max_abs_diff(g, w);
            if (run == 0) qInfo("rel l2 %.2e, max abs err %.3g (max |y| %.3g)", err, max_err, max_y);
            QVERIFY2(err < 4e-3 && max_err <= max_y / 64,
                     qPrintable(QString("run %1: rel l2 %2, max abs err %3").arg(run).arg(err).arg(max_err)));
            if (c.format != QuantFormat::fp8_e4m3) {
                const auto ws = dws.download();
                for (std::size_t b = 0; b < kQuantGemvCounterBytes; ++b)
                    if (ws[b]) QFAIL("the workspace's counters are not zero after the launch");
            }
            if (tokens > 1 && run == 0) {  // the same x in every row: identical rows (batch invariance)
                DeviceBuffer<uint16_t> dsame(repeat_first_row(x, tokens, xs));
                QuantGemvParams same = p;
                same.x = dsame.get();
                cuda_check(loradesk::kernels::quant_gemv(same, nullptr), "quant_gemv launch");
                cuda_check(cudaDeviceSynchronize(), "quant_gemv");
                const auto [row, col] = first_row_difference(dy.download(), tokens, n, ys);
                if (row >= 0)
                    QFAIL(
                        qPrintable(QString("row %1 differs from row 0 at column %2 for the same x").arg(row).arg(col)));
                dy.upload(std::vector<uint16_t>(want.size(), 0x7fc1));
            }
        }
    }

    // The fused epilogue: bias and the LoRA expand of a precomputed xa, for a matrix that is the whole site (slice
    // boundaries inside it) or only its middle slice (lora_col 64), tokens on adapters, on the base, and on an
    // adapter that leaves one slice alone (rank 0). Against the twin's epilogue, with the tolerance above.
    void quant_gemv_epilogue_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("whole_site");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<bool>("base_first");
        QTest::addColumn<bool>("bias");
        for (int f : {int(QuantFormat::awq_int4), int(QuantFormat::gptq_int4), int(QuantFormat::fp8_e4m3)})
            for (bool whole : {true, false})
                for (int t : {1, 2, 4})
                    for (bool base_first : {false, true}) {
                        if (t == 1 && base_first) continue;
                        const bool bias = (f + t + int(whole)) % 2 == 0;
                        QTest::newRow(qPrintable(QString("format%1 %2 t%3%4%5")
                                                     .arg(f)
                                                     .arg(whole ? "site" : "middle")
                                                     .arg(t)
                                                     .arg(base_first ? " base-first" : "")
                                                     .arg(bias ? " bias" : "")))
                            << f << whole << t << base_first << bias;
                    }
    }

    void quant_gemv_epilogue() {
        QFETCH(int, format);
        QFETCH(bool, whole_site);
        QFETCH(int, tokens);
        QFETCH(bool, base_first);
        QFETCH(bool, bias);
        const int n = whole_site ? QuantLoraCase::kSiteColumns : 128, k = 512, lora_col = whole_site ? 0 : 64;
        QuantCase c(QuantFormat(format), n, k, 128, false, false, Fp8Scaling::block128, uint32_t(n + tokens));
        std::mt19937 rng(uint32_t(17 + tokens + format));
        auto x = random_bf16(rng, std::size_t(tokens) * k);
        const QuantLoraCase lc(rng, tokens, base_first);
        const auto b = random_bf16(rng, std::size_t(n));
        DeviceBuffer<uint16_t> dx(x), db(b), dy(std::vector<uint16_t>(std::size_t(tokens) * n, 0));
        auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
        DeviceBuffer<uint16_t> ds(nonempty(c.s16));
        DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros)), dg(nonempty(c.g_idx));
        DeviceBuffer<uint8_t> dw8(nonempty(c.w8)), dws(std::vector<uint8_t>(quant_gemv_workspace_bytes(n, k, 128), 0));
        DeviceBuffer<float> dsc(nonempty(c.w_scale));

        std::vector<uint16_t> want(std::size_t(tokens) * n);
        QuantGemvParams hp = c.params(x.data(), k, want.data(), n, tokens, c.qweight.data(), c.qzeros.data(),
                                      c.s16.data(), c.g_idx.data(), c.w8.data(), c.w_scale.data(), nullptr);
        hp.bias = bias ? b.data() : nullptr, hp.lora_expand = true, hp.lora = lc.params(false), hp.lora_col = lora_col;
        ref::quant_gemv(hp);
        QuantGemvParams p = c.params(dx.get(), k, dy.get(), n, tokens, dqw.get(), dqz.get(), ds.get(), dg.get(),
                                     dw8.get(), dsc.get(), dws.get());
        p.bias = bias ? db.get() : nullptr, p.lora_expand = true, p.lora = lc.params(true), p.lora_col = lora_col;
        QVERIFY(quant_gemv_supported(p));
        cuda_check(loradesk::kernels::quant_gemv(p, nullptr), "quant_gemv launch");
        cuda_check(cudaDeviceSynchronize(), "quant_gemv");
        const auto got = dy.download();
        std::vector<float> g, w;
        double max_y = 0, max_epilogue = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
            g.push_back(ref::bf16_to_f32(got[i])), w.push_back(ref::bf16_to_f32(want[i]));
            max_y = std::max(max_y, double(std::fabs(w.back())));
            max_epilogue = std::max(max_epilogue, std::fabs(ref::quant_epilogue(hp, int(i) / n, int(i) % n)));
        }
        QVERIFY2(max_epilogue > 1.0, "the case must exercise the epilogue");
        const double err = rel_l2(g, w), max_err = max_abs_diff(g, w);
        QVERIFY2(err < 4e-3 && max_err <= max_y / 64,
                 qPrintable(QString("rel l2 %1, max abs err %2").arg(err).arg(max_err)));
    }

    // The shrink in the fp8 kernel's own launch at 1 token (lora_shrink): the xa it writes against the twin's shrink,
    // and y against the twin, for a whole site and its middle slice, over k = 384 (lanes without weights to stream:
    // every block takes the general path) and 4096, with slots of max rank 16 (xa loaded in the last iteration) and
    // 80 (the generic expand). Each case runs with the blocks in both orders: in reverse, the blocks that stream rows
    // reach their epilogue before any shrink block has run and take the shrink's units themselves
    // (lora_handover.cuh). Both orders give the same bits, and the counters end at the launch's units.
    void quant_gemv_fused_shrink_data() {
        QTest::addColumn<bool>("whole_site");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("max_rank");
        for (bool whole : {true, false})
            for (int k : {384, 4096})
                for (int max_rank : {16, 80})
                    QTest::newRow(
                        qPrintable(QString("%1 k%2 max rank %3").arg(whole ? "site" : "middle").arg(k).arg(max_rank)))
                        << whole << k << max_rank;
    }

    void quant_gemv_fused_shrink() {
        QFETCH(bool, whole_site);
        QFETCH(int, k);
        QFETCH(int, max_rank);
        const int n = whole_site ? QuantLoraCase::kSiteColumns : 128, lora_col = whole_site ? 0 : 64;
        const QuantCase c(QuantFormat::fp8_e4m3, n, k, 128, false, false, Fp8Scaling::block128, uint32_t(n + k));
        std::mt19937 rng(uint32_t(23 + k + max_rank));
        const auto x = random_bf16(rng, std::size_t(k));
        QuantLoraCase lc(rng, 1, false, k, max_rank);
        const auto b = random_bf16(rng, std::size_t(n));
        std::vector<uint16_t> want(static_cast<std::size_t>(n));
        QuantGemvParams hp = c.params(x.data(), k, want.data(), n, 1, nullptr, nullptr, nullptr, nullptr, c.w8.data(),
                                      c.w_scale.data(), nullptr);
        hp.bias = b.data(), hp.lora_expand = hp.lora_shrink = true, hp.lora = lc.params(false), hp.lora_col = lora_col;
        ref::quant_gemv(hp);  // the twin's shrink writes lc.xa first

        DeviceBuffer<uint16_t> dx(x), db(b), dy(std::vector<uint16_t>(want.size(), 0x7fc1));
        DeviceBuffer<uint8_t> dw8(c.w8);
        DeviceBuffer<float> dsc(c.w_scale);
        DeviceBuffer<int32_t> sync(std::vector<int32_t>(2, 0));
        QuantGemvParams p =
            c.params(dx.get(), k, dy.get(), n, 1, nullptr, nullptr, nullptr, nullptr, dw8.get(), dsc.get(), nullptr);
        p.bias = db.get(), p.lora_expand = p.lora_shrink = true, p.lora = lc.params(true), p.lora_col = lora_col;
        p.lora_sync = sync.get();
        const int units = (3 * max_rank + 3) / 4;  // a row per warp, 4 warps
        std::vector<uint16_t> first;
        for (bool reverse : {false, true}) {
            sync.upload(std::vector<int32_t>(2, 0));
            dy.upload(std::vector<uint16_t>(want.size(), 0x7fc1));
            p.reverse_block_order = reverse;
            QVERIFY(quant_gemv_supported(p));
            cuda_check(loradesk::kernels::quant_gemv(p, nullptr), "quant_gemv launch");
            cuda_check(cudaDeviceSynchronize(), "quant_gemv");
            const auto got = dy.download();
            if (!reverse) first = got;
            QVERIFY2(got == first, "the reverse block order gave other bits");
            const auto counters = sync.download();
            QVERIFY2(counters[0] == units && counters[1] >= units, "every unit claimed and published once");
        }
        // xa where the expand reads it (the token is on slot 2: ranks below the slot's) against the twin's shrink.
        const auto xa = lc.device_xa();
        for (int j = 0; j < 3; ++j)
            for (int r = 0; r < lc.ranks[std::size_t(j)][2]; ++r) {
                const std::size_t i = std::size_t(j * max_rank + r);
                QVERIFY2(std::fabs(xa[i] - lc.xa[i]) <= 1e-4f * (1.f + std::fabs(lc.xa[i])),
                         qPrintable(QString("xa[%1] %2, twin %3").arg(i).arg(xa[i]).arg(lc.xa[i])));
            }
        std::vector<float> g, w;
        double max_y = 0, max_epilogue = 0;
        for (int col = 0; col < n; ++col) {
            g.push_back(ref::bf16_to_f32(first[std::size_t(col)])),
                w.push_back(ref::bf16_to_f32(want[std::size_t(col)]));
            max_y = std::max(max_y, double(std::fabs(w.back())));
            max_epilogue = std::max(max_epilogue, std::fabs(ref::quant_epilogue(hp, 0, col)));
        }
        QVERIFY2(max_epilogue > 1.0, "the case must exercise the epilogue");
        const double err = rel_l2(g, w), max_err = max_abs_diff(g, w);
        QVERIFY2(err < 4e-3 && max_err <= max_y / 64,
                 qPrintable(QString("rel l2 %1, max abs err %2").arg(err).arg(max_err)));
    }

    // quant_dequantize (the prefill path's expansion to bf16) equals the twin's f32 weights rounded once, bit for
    // bit, over the whole matrix and over an inner row range (the runner expands projections in row slices).
    void quant_dequantize_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("group");
        QTest::addColumn<bool>("act_order");
        QTest::addColumn<bool>("zero_plus_one");
        QTest::addColumn<int>("scaling");
        for (auto [n, k] : std::vector<std::pair<int, int>>{{8, 128}, {56, 384}, {776, 4096}, {264, 2048}}) {
            QTest::newRow(qPrintable(QString("awq %1x%2").arg(n).arg(k)))
                << int(QuantFormat::awq_int4) << n << k << 128 << false << false << 0;
            for (bool act : {false, true})
                QTest::newRow(qPrintable(QString("gptq %1x%2 %3").arg(n).arg(k).arg(act ? "act" : "seq")))
                    << int(QuantFormat::gptq_int4) << n << k << 128 << act << act << 0;
        }
        QTest::newRow("awq 40x320 g64") << int(QuantFormat::awq_int4) << 40 << 320 << 64 << false << false << 0;
        QTest::newRow("gptq 48x2048 g32 act") << int(QuantFormat::gptq_int4) << 48 << 2048 << 32 << true << true << 0;
        for (auto [n, k] : std::vector<std::pair<int, int>>{{1, 128}, {7, 384}, {129, 4096}, {300, 200}})
            for (Fp8Scaling s : {Fp8Scaling::per_tensor, Fp8Scaling::per_channel, Fp8Scaling::block128})
                QTest::newRow(qPrintable(QString("fp8 %1x%2 scaling%3").arg(n).arg(k).arg(int(s))))
                    << int(QuantFormat::fp8_e4m3) << n << k << 128 << false << false << int(s);
    }

    void quant_dequantize() {
        QFETCH(int, format);
        QFETCH(int, n);
        QFETCH(int, k);
        QFETCH(int, group);
        QFETCH(bool, act_order);
        QFETCH(bool, zero_plus_one);
        QFETCH(int, scaling);
        QuantCase c(QuantFormat(format), n, k, group, act_order, zero_plus_one, Fp8Scaling(scaling), uint32_t(n + k));
        const QuantGemvParams host = c.params(nullptr, 0, nullptr, 0, 1, c.qweight.data(), c.qzeros.data(),
                                              c.s16.data(), c.g_idx.data(), c.w8.data(), c.w_scale.data(), nullptr);
        const std::vector<float> want = ref::quant_dequantize(host);
        auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
        DeviceBuffer<uint16_t> ds(nonempty(c.s16));
        DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros)), dg(nonempty(c.g_idx));
        DeviceBuffer<uint8_t> dw8(nonempty(c.w8));
        DeviceBuffer<float> dsc(nonempty(c.w_scale));
        const QuantGemvParams p = c.params(nullptr, 0, nullptr, 0, 1, dqw.get(), dqz.get(), ds.get(), dg.get(),
                                           dw8.get(), dsc.get(), nullptr);
        const int align = format == int(QuantFormat::fp8_e4m3) ? 1 : 8;
        std::vector<std::pair<int, int>> ranges{{0, n}};
        if (n >= 3 * align) ranges.push_back({align, n - 2 * align});
        for (auto [begin, rows] : ranges) {
            QVERIFY(quant_dequantize_supported(p, begin, rows));
            DeviceBuffer<uint16_t> out(std::vector<uint16_t>(std::size_t(rows) * k + 8, 0x7fc1));
            cuda_check(loradesk::kernels::quant_dequantize(p, begin, rows, out.get(), nullptr), "quant_dequantize");
            cuda_check(cudaDeviceSynchronize(), "quant_dequantize");
            const auto got = out.download();
            for (std::size_t i = 0; i < std::size_t(rows) * k; ++i) {
                const uint16_t w = ref::f32_to_bf16(want[std::size_t(begin) * k + i]);
                if (got[i] != w)
                    QFAIL(qPrintable(QString("rows %1+%2: element %3 is %4, want %5")
                                         .arg(begin)
                                         .arg(rows)
                                         .arg(i)
                                         .arg(got[i], 0, 16)
                                         .arg(w, 0, 16)));
            }
            for (std::size_t i = std::size_t(rows) * k; i < got.size(); ++i)
                QVERIFY2(got[i] == 0x7fc1, "quant_dequantize wrote past its rows");
        }
        QVERIFY(!quant_dequantize_supported(p, 0, n + 1));
        QuantGemvParams sorted = p;  // a matrix sorted by group at load dequantizes without its k_order
        sorted.g_idx = nullptr, sorted.k_order = reinterpret_cast<const int32_t*>(dqw.get());
        QVERIFY(!quant_dequantize_supported(sorted, 0, n));
    }

    // Launches of different widths share one workspace in the runner: a narrow launch's partials must not land
    // on a wider launch's counters. Narrow and wide GPTQ/AWQ launches alternate on one workspace; every launch
    // must give the bits of its first run.
    void one_workspace_for_all_widths() {
        const int k = 4096;
        std::vector<QuantCase> cases;
        cases.emplace_back(QuantFormat::awq_int4, 256, k, 128, false, false, Fp8Scaling::block128, 1u);
        cases.emplace_back(QuantFormat::gptq_int4, 3072, k, 128, false, true, Fp8Scaling::block128, 2u);
        cases.emplace_back(QuantFormat::awq_int4, 1024, k, 128, false, false, Fp8Scaling::block128, 3u);
        std::size_t ws_bytes = 0;
        for (const auto& c : cases) ws_bytes = std::max(ws_bytes, quant_gemv_workspace_bytes(c.n, k, 128));
        DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(ws_bytes, 0));
        std::mt19937 rng(4);
        DeviceBuffer<uint16_t> dx(random_bf16(rng, std::size_t(2) * k));
        std::vector<std::unique_ptr<DeviceBuffer<int32_t>>> qw, qz;
        std::vector<std::unique_ptr<DeviceBuffer<uint16_t>>> sc, ys;
        std::vector<QuantGemvParams> ps;
        for (const auto& c : cases) {
            qw.push_back(std::make_unique<DeviceBuffer<int32_t>>(c.qweight));
            qz.push_back(std::make_unique<DeviceBuffer<int32_t>>(c.qzeros));
            sc.push_back(std::make_unique<DeviceBuffer<uint16_t>>(c.s16));
            ys.push_back(std::make_unique<DeviceBuffer<uint16_t>>(std::size_t(2) * c.n));
            ps.push_back(c.params(dx.get(), k, ys.back()->get(), c.n, 2, qw.back()->get(), qz.back()->get(),
                                  sc.back()->get(), nullptr, nullptr, nullptr, dws.get()));
        }
        std::vector<std::vector<uint16_t>> first(cases.size());
        for (int round = 0; round < 3; ++round)
            for (std::size_t i = 0; i < cases.size(); ++i) {
                ys[i]->upload(std::vector<uint16_t>(std::size_t(2) * cases[i].n, 0x7fc1));  // no stale result passes
                cuda_check(loradesk::kernels::quant_gemv(ps[i], nullptr), "quant_gemv launch");
                cuda_check(cudaDeviceSynchronize(), "quant_gemv");
                const auto got = ys[i]->download();
                if (round == 0) first[i] = got;
                QVERIFY2(std::find(got.begin(), got.end(), uint16_t(0x7fc1)) == got.end(), "an output was not written");
                QVERIFY2(got == first[i], qPrintable(QString("case %1 round %2 changed").arg(i).arg(round)));
            }
    }

    void unsupported_shapes_are_refused() {
        QuantGemvParams p;
        p.n_tokens = 5, p.n = 8, p.k = 128;
        QCOMPARE(loradesk::kernels::quant_gemv(p, nullptr), cudaErrorInvalidValue);
        QVERIFY(!quant_gemv_supported(p));

        // The shrink in the launch: the fp8 kernel at 1 token, with the expand, counters and aligned A rows only.
        const QuantCase c(QuantFormat::fp8_e4m3, 256, 512, 128, false, false, Fp8Scaling::block128, 5u);
        std::mt19937 rng(5);
        const QuantLoraCase lc(rng, 2, false, 512);
        DeviceBuffer<uint16_t> dx(std::vector<uint16_t>(2 * 512)), dy(std::vector<uint16_t>(2 * 256));
        DeviceBuffer<uint8_t> dw8(c.w8);
        DeviceBuffer<float> dsc(c.w_scale);
        DeviceBuffer<int32_t> sync(std::vector<int32_t>(2, 0));
        QuantGemvParams ok = c.params(dx.get(), 512, dy.get(), 256, 1, nullptr, nullptr, nullptr, nullptr, dw8.get(),
                                      dsc.get(), nullptr);
        ok.lora_expand = ok.lora_shrink = true, ok.lora = lc.params(true), ok.lora_sync = sync.get();
        QVERIFY(quant_gemv_supported(ok));
        auto refused = [&](auto change) {
            QuantGemvParams q = ok;
            change(q);
            return !quant_gemv_supported(q) && loradesk::kernels::quant_gemv(q, nullptr) == cudaErrorInvalidValue;
        };
        QVERIFY(refused([](QuantGemvParams& q) { q.n_tokens = 2; }));
        QVERIFY(refused([](QuantGemvParams& q) { q.lora_expand = false; }));
        QVERIFY(refused([](QuantGemvParams& q) { q.lora_sync = nullptr; }));
        QVERIFY(refused([](QuantGemvParams& q) { q.x_before_wait = true; }));
        QVERIFY(refused([](QuantGemvParams& q) { q.lora.slices[1].a = nullptr; }));
        QVERIFY(refused([](QuantGemvParams& q) { q.lora.slices[0].a += 1; }));           // A rows not 16-byte aligned
        QVERIFY(refused([](QuantGemvParams& q) { q.format = QuantFormat::awq_int4; }));  // int4: no shrink blocks
    }
};

QTEST_GUILESS_MAIN(TstQuantGemvCuda)
#include "tst_quant_gemv_cuda.moc"
