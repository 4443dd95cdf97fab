// The quantized GEMV's and GEMM's twins (ref::quant_gemv, ref::quant_dequantize, ref::quant_mma) on hand-computed words
// (AWQ's interleaved nibbles, GPTQ's sequential ones, v1 zeros, act-order g_idx, fp8 block scales) and against the test
// packers' logical values on random cases. CPU only, runs in CI.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <random>

#include "kernel_test_util.h"
#include "quant_case.h"
#include "ref/ref_kernels.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {
constexpr uint16_t kOne16 = 0x3c00, kTwo16 = 0x4000, kHalf16 = 0x3800;  // fp16 1, 2, 0.5
constexpr uint16_t kOneBf = 0x3f80;                                     // bf16 1
}  // namespace

class TstQuantTwin : public QObject {
    Q_OBJECT
  private slots:
    void decodes_fp16_and_fp8() {
        QCOMPARE(ref::fp16_to_f32(kOne16), 1.0f);
        QCOMPARE(ref::fp16_to_f32(0xc000), -2.0f);
        QCOMPARE(ref::fp16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
        QCOMPARE(ref::fp16_to_f32(0x7bff), 65504.0f);
        QCOMPARE(ref::fp8_e4m3_to_f32(0x38), 1.0f);
        QCOMPARE(ref::fp8_e4m3_to_f32(0x40), 2.0f);
        QCOMPARE(ref::fp8_e4m3_to_f32(0xc0), -2.0f);
        QCOMPARE(ref::fp8_e4m3_to_f32(0x7e), 448.0f);                    // largest finite
        QCOMPARE(ref::fp8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6));      // smallest normal
        QCOMPARE(ref::fp8_e4m3_to_f32(0x07), 7 * std::ldexp(1.0f, -9));  // largest subnormal
        QVERIFY(std::isnan(ref::fp8_e4m3_to_f32(0x7f)));
        QVERIFY(std::isnan(ref::fp8_e4m3_to_f32(0xff)));
    }

    // Every finite code round-trips; each midpoint between neighbours goes to the even code, a hair off it to the
    // nearer; past 448 (infinities too) saturates to 448; NaN stays NaN.
    void encodes_fp8_to_nearest_even_saturating() {
        for (int c = 0; c < 256; ++c) {
            if ((c & 0x7f) == 0x7f) continue;
            QCOMPARE(int(ref::fp8_e4m3_from_f32(ref::fp8_e4m3_to_f32(uint8_t(c)))), c);
        }
        for (int c = 0; c < 0x7e; ++c) {
            const float lo = ref::fp8_e4m3_to_f32(uint8_t(c)), hi = ref::fp8_e4m3_to_f32(uint8_t(c + 1));
            const float mid = (lo + hi) / 2;  // exact: neighbours differ by one step of a 3-bit mantissa
            const int even = c % 2 == 0 ? c : c + 1;
            QCOMPARE(int(ref::fp8_e4m3_from_f32(mid)), even);
            QCOMPARE(int(ref::fp8_e4m3_from_f32(-mid)), 0x80 | even);
            QCOMPARE(int(ref::fp8_e4m3_from_f32(std::nextafter(mid, 0.0f))), c);
            QCOMPARE(int(ref::fp8_e4m3_from_f32(std::nextafter(mid, 1e9f))), c + 1);
        }
        QCOMPARE(int(ref::fp8_e4m3_from_f32(460.0f)), 0x7e);
        QCOMPARE(int(ref::fp8_e4m3_from_f32(1e30f)), 0x7e);
        QCOMPARE(int(ref::fp8_e4m3_from_f32(-INFINITY)), 0xfe);
        QCOMPARE(int(ref::fp8_e4m3_from_f32(std::ldexp(1.0f, -11))), 0);  // below half the smallest subnormal
        QCOMPARE(int(ref::fp8_e4m3_from_f32(NAN)), 0x7f);
    }

    // One token, 130 columns: block 0 scaled by its amax (2), block 1 (two columns) all zero keeps scale 1; the GEMM
    // runs on 4 rows, the 3 padding rows zero with scale 1.
    void quantizes_rows_per_128_block() {
        std::vector<uint16_t> x(130, 0);
        x[0] = ref::f32_to_bf16(2.0f), x[1] = ref::f32_to_bf16(-1.0f), x[2] = ref::f32_to_bf16(0.001f);
        QCOMPARE(fp8_gemm_rows(1), 4);
        const int ld = fp8_act_scale_ld(1);
        std::vector<uint8_t> q(4 * 130, 0xaa);
        std::vector<float> s(2 * std::size_t(ld), -1.0f);
        ref::fp8_quantize_rows(x.data(), 130, 1, 130, q.data(), s.data(), ld, 128);
        QCOMPARE(s[0], 2.0f / 448.0f);
        QCOMPARE(s[std::size_t(ld)], 1.0f);
        QCOMPARE(int(q[0]), 0x7e);  // 448
        QCOMPARE(ref::fp8_e4m3_to_f32(q[1]), -224.0f);
        QCOMPARE(int(q[2]), int(ref::fp8_e4m3_from_f32(ref::bf16_to_f32(x[2]) / s[0])));  // 0.224: 0.21875
        QCOMPARE(int(q[128]), 0);
        QCOMPARE(int(q[129]), 0);
        for (int t = 1; t < 4; ++t) {
            QCOMPARE(s[std::size_t(t)], 1.0f);
            QCOMPARE(s[std::size_t(ld + t)], 1.0f);
            for (int c = 0; c < 130; ++c) QCOMPARE(int(q[std::size_t(t) * 130 + std::size_t(c)]), 0);
        }
    }

    // One scale per token (per-channel / per-tensor weights): the row's amax over all its 130 columns.
    void quantizes_rows_per_token() {
        std::vector<uint16_t> x(2 * 130, 0);
        x[0] = ref::f32_to_bf16(0.5f), x[129] = ref::f32_to_bf16(-4.0f), x[130 + 3] = ref::f32_to_bf16(1.0f);
        const int ld = fp8_act_scale_ld(2);
        std::vector<uint8_t> q(4 * 130, 0xaa);
        std::vector<float> s(std::size_t(ld), -1.0f);
        ref::fp8_quantize_rows(x.data(), 130, 2, 130, q.data(), s.data(), ld, 130);
        QCOMPARE(s[0], 4.0f / 448.0f);
        QCOMPARE(s[1], 1.0f / 448.0f);
        QCOMPARE(s[2], 1.0f);         // padding rows
        QCOMPARE(int(q[129]), 0xfe);  // -448
        QCOMPARE(ref::fp8_e4m3_to_f32(q[0]), 56.0f);
        QCOMPARE(int(q[130 + 3]), 0x7e);
        QCOMPARE(int(q[2 * 130]), 0);
    }

    // Per-channel weights: y[t, c] = w_scale[c] * x_scale[t] * the row's e4m3 dot.
    void per_channel_gemm_hand_case() {
        std::vector<uint8_t> w(16 * 32, 0x38), xq(4 * 32, 0x40);  // 1.0 and 2.0
        std::fill(xq.begin() + 32, xq.end(), uint8_t(0));         // one token, three padding rows
        std::vector<float> ws(16), xs{0.5f, 1.0f, 1.0f, 1.0f};
        for (int c = 0; c < 16; ++c) ws[std::size_t(c)] = float(c + 1);
        std::vector<uint16_t> y(4 * 16, 0x1111);
        Fp8GemmParams p;
        p.w_scaling = Fp8Scaling::per_channel;
        p.w = w.data(), p.w_scale = ws.data(), p.xq = xq.data(), p.x_scale = xs.data(), p.y = y.data();
        p.y_row_stride = 16, p.n_tokens = 1, p.n = 16, p.k = 32;
        ref::fp8_gemm(p);
        QCOMPARE(ref::bf16_to_f32(y[0]), 32.0f);        // 32 * 1 * 2, scales 1 * 0.5
        QCOMPARE(ref::bf16_to_f32(y[15]), 16 * 32.0f);  // column 15's scale 16
        QCOMPARE(y[16], uint16_t(0));                   // padding row
    }

    // y = sum over blocks of w_scale * x_scale * the block's e4m3 dot: all-ones operands over 2 blocks of k, 2 tokens
    // (4 rows with the padding, which come out zero).
    void block_gemm_hand_case() {
        std::vector<uint8_t> w(128 * 256, 0x38), xq(4 * 256, 0x38);  // e4m3 1.0
        std::fill(xq.begin() + 2 * 256, xq.end(), uint8_t(0));       // padding rows, as fp8_quantize_rows writes them
        xq[256 + 5] = 0x40;                                          // token 1, one 2.0 in block 0
        std::vector<float> ws{0.5f, 0.25f}, xs{2.0f, 3.0f, 1.0f, 1.0f, 4.0f, 5.0f, 1.0f, 1.0f};  // [block][4 rows]
        std::vector<uint16_t> y(4 * 130, 0x1111);
        Fp8GemmParams p;
        p.w = w.data(), p.w_scale = ws.data(), p.xq = xq.data(), p.x_scale = xs.data(), p.y = y.data() + 1;
        p.y_row_stride = 130, p.n_tokens = 2, p.n = 128, p.k = 256;
        ref::fp8_gemm(p);
        QCOMPARE(ref::bf16_to_f32(y[1]), 128 * 0.5f * 2.0f + 128 * 0.25f * 4.0f);  // 256
        QCOMPARE(ref::bf16_to_f32(y[130 + 128]), 354.0f);  // 129 * 0.5 * 3 + 128 * 0.25 * 5 = 353.5, bf16 354
        QCOMPARE(y[0], uint16_t(0x1111));
        QCOMPARE(y[129], uint16_t(0x1111));
        QCOMPARE(y[2 * 130 + 1], uint16_t(0));
        QCOMPARE(y[3 * 130 + 128], uint16_t(0));
    }

    // One AWQ word 0x76543210 holds nibble i = i; AutoAWQ's order puts nibble i in column kAwqOrder[i].
    void awq_hand_case() {
        const std::vector<int32_t> qweight{0x76543210}, qzeros{0x11111111};
        std::vector<uint16_t> scales(8, kOne16), x{kOneBf}, y(8, 0);
        scales[1] = kTwo16;
        QuantGemvParams p;
        p.format = QuantFormat::awq_int4, p.x = x.data(), p.y = y.data(), p.n = 8, p.k = 1, p.group_size = 1;
        p.qweight = qweight.data(), p.qzeros = qzeros.data(), p.scales = scales.data();
        ref::quant_gemv(p);
        // column c holds q = nibble index i with kAwqOrder[i] = c: 0, 4, 1, 5, 2, 6, 3, 7; w = (q - 1) * s.
        const std::vector<float> want{-1, 6, 0, 4, 1, 5, 2, 6};
        for (int c = 0; c < 8; ++c) QCOMPARE(ref::bf16_to_f32(y[std::size_t(c)]), want[std::size_t(c)]);
    }

    // GPTQ: one column, 16 rows in two words; two groups of 8 with g_idx swapping them (act-order); v1 zeros.
    void gptq_hand_case_data() {
        QTest::addColumn<bool>("act_order");
        QTest::addColumn<bool>("zero_plus_one");
        QTest::newRow("k/G v2") << false << false;
        QTest::newRow("k/G v1") << false << true;
        QTest::newRow("act-order v1") << true << true;
    }
    void gptq_hand_case() {
        QFETCH(bool, act_order);
        QFETCH(bool, zero_plus_one);
        // qweight [2, 8]: column 0 rows 0..7 = 0..7, rows 8..15 = 15; other columns 0.
        std::vector<int32_t> qweight(16, 0);
        qweight[0] = 0x76543210, qweight[8] = int32_t(0xffffffffu);
        // qzeros [2 groups, 1 pack]: stored zero of column 0: group 0 -> 2, group 1 -> 3.
        const std::vector<int32_t> qzeros{0x2, 0x3};
        std::vector<uint16_t> scales(16, kOne16);
        scales[8] = kHalf16;  // group 1, column 0
        std::vector<int32_t> g_idx(16);
        for (int k = 0; k < 16; ++k) g_idx[std::size_t(k)] = act_order ? 1 - k / 8 : k / 8;
        std::vector<uint16_t> x(16, kOneBf), y(8, 0);
        QuantGemvParams p;
        p.format = QuantFormat::gptq_int4, p.x = x.data(), p.y = y.data(), p.n = 8, p.k = 16, p.group_size = 8;
        p.qweight = qweight.data(), p.qzeros = qzeros.data(), p.scales = scales.data();
        p.g_idx = act_order ? g_idx.data() : nullptr, p.zero_plus_one = zero_plus_one;
        const auto w = ref::quant_dequantize(p);
        const int z0 = 2 + zero_plus_one, z1 = 3 + zero_plus_one;
        for (int k = 0; k < 16; ++k) {
            const int q = k < 8 ? k : 15, g = act_order ? 1 - k / 8 : k / 8;
            const float want = float(q - (g == 0 ? z0 : z1)) * (g == 0 ? 1.0f : 0.5f);
            QCOMPARE(w[std::size_t(k)], want);
        }
        ref::quant_gemv(p);
        double sum = 0;
        for (int k = 0; k < 16; ++k) sum += w[std::size_t(k)];
        QCOMPARE(ref::bf16_to_f32(y[0]), float(sum));
        QCOMPARE(ref::bf16_to_f32(y[1]), zero_plus_one ? -16.0f : 0.0f);  // q = 0, stored zero 0, scale 1
    }

    // fp8 block-wise: rows 0 and 128 sit in different scale blocks; per-channel and per-tensor on the same bytes.
    void fp8_hand_case_data() {
        QTest::addColumn<int>("scaling");
        QTest::newRow("block128") << int(Fp8Scaling::block128);
        QTest::newRow("per_channel") << int(Fp8Scaling::per_channel);
        QTest::newRow("per_tensor") << int(Fp8Scaling::per_tensor);
    }
    void fp8_hand_case() {
        QFETCH(int, scaling);
        const int n = 129, k = 144;
        std::vector<uint8_t> w(std::size_t(n) * k, 0);
        w[0] = 0x38;                           // row 0, k 0: 1.0
        w[std::size_t(128) * k + 130] = 0xc0;  // row 128, k 130: -2.0 (scale block [1, 1])
        std::vector<float> scale;
        if (scaling == int(Fp8Scaling::block128)) scale = {0.5f, 9.0f, 9.0f, 3.0f};
        if (scaling == int(Fp8Scaling::per_channel))
            scale.assign(std::size_t(n), 9.0f), scale[0] = 0.5f, scale[128] = 3.0f;
        if (scaling == int(Fp8Scaling::per_tensor)) scale = {0.5f};
        std::vector<uint16_t> x(std::size_t(k), kOneBf), y(std::size_t(n), 0x7fc1);
        QuantGemvParams p;
        p.format = QuantFormat::fp8_e4m3, p.x = x.data(), p.y = y.data(), p.n = n, p.k = k;
        p.w_fp8 = w.data(), p.w_scale = scale.data(), p.fp8_scaling = Fp8Scaling(scaling);
        ref::quant_gemv(p);
        const float s128 = scaling == int(Fp8Scaling::per_tensor) ? 0.5f : 3.0f;
        QCOMPARE(ref::bf16_to_f32(y[0]), 0.5f);
        QCOMPARE(ref::bf16_to_f32(y[128]), -2.0f * s128);
        QCOMPARE(ref::bf16_to_f32(y[7]), 0.0f);
    }

    // Random cases: the twin's unpacking of the packed tensors equals the packers' logical weights exactly.
    void unpack_matches_logical_weights_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("group");
        QTest::addColumn<bool>("act_order");
        QTest::addColumn<bool>("zero_plus_one");
        QTest::newRow("awq 24x256 g128") << int(QuantFormat::awq_int4) << 24 << 256 << 128 << false << false;
        QTest::newRow("awq 56x96 g32") << int(QuantFormat::awq_int4) << 56 << 96 << 32 << false << false;
        QTest::newRow("gptq 8x128 v2") << int(QuantFormat::gptq_int4) << 8 << 128 << 128 << false << false;
        QTest::newRow("gptq 152x256 v1") << int(QuantFormat::gptq_int4) << 152 << 256 << 128 << false << true;
        QTest::newRow("gptq 40x384 act v1") << int(QuantFormat::gptq_int4) << 40 << 384 << 128 << true << true;
    }
    void unpack_matches_logical_weights() {
        QFETCH(int, format);
        QFETCH(int, n);
        QFETCH(int, k);
        QFETCH(int, group);
        QFETCH(bool, act_order);
        QFETCH(bool, zero_plus_one);
        QuantCase c(QuantFormat(format), n, k, group, act_order, zero_plus_one, Fp8Scaling::block128,
                    uint32_t(n * 7 + k));
        std::mt19937 rng(3);
        auto x = random_bf16(rng, std::size_t(k) * 2);
        std::vector<uint16_t> y(std::size_t(n) * 2);
        const QuantGemvParams p = c.params(x.data(), k, y.data(), n, 2, c.qweight.data(), c.qzeros.data(), c.s16.data(),
                                           c.g_idx.data(), nullptr, nullptr, nullptr);
        const auto w = ref::quant_dequantize(p);
        for (int col = 0; col < n; ++col)
            for (int kk = 0; kk < k; ++kk)
                if (w[std::size_t(col) * k + kk] != c.weight(col, kk))
                    QFAIL(qPrintable(QString("w[%1, %2] = %3, want %4")
                                         .arg(col)
                                         .arg(kk)
                                         .arg(w[std::size_t(col) * k + kk])
                                         .arg(c.weight(col, kk))));
        ref::quant_gemv(p);
        for (int t = 0; t < 2; ++t)
            for (int col = 0; col < n; ++col) {
                double d = 0;
                for (int kk = 0; kk < k; ++kk)
                    d += double(ref::bf16_to_f32(x[std::size_t(t) * k + kk])) * c.weight(col, kk);
                QCOMPARE(y[std::size_t(t) * n + col], ref::f32_to_bf16(float(d)));
            }
        if (act_order) return;
        // quant_mma's weights: (q - z) times the scale rounded to bf16, rounded to bf16 once.
        const auto wm = ref::quant_mma_dequantize(p);
        for (int col = 0; col < n; ++col)
            for (int kk = 0; kk < k; ++kk) {
                const int g = kk / group;
                const float s =
                    ref::bf16_to_f32(ref::f32_to_bf16(QuantCase::fp16_value(c.s16[std::size_t(g) * n + col])));
                const float want = ref::bf16_to_f32(
                    ref::f32_to_bf16(float(c.q[std::size_t(col) * k + kk] - c.zero[std::size_t(g) * n + col]) * s));
                if (wm[std::size_t(col) * k + kk] != want)
                    QFAIL(qPrintable(QString("mma w[%1, %2] = %3, want %4")
                                         .arg(col)
                                         .arg(kk)
                                         .arg(wm[std::size_t(col) * k + kk])
                                         .arg(want)));
            }
    }

    // quant_mma's rounding on one hand-made AWQ word: scale 1 + 2^-10 (fp16 0x3c01) becomes bf16 1, so q - z = 3
    // gives 3 where the exact weight is 3.0029; scale 3 + 2^-9 keeps 3 too, and (q - z) * 3 = 9 stays exact.
    void mma_rounding_hand_case() {
        const std::vector<int32_t> qweight{0x44444444}, qzeros{0x11111111};
        std::vector<uint16_t> scales(8, 0x3c01), x{kOneBf}, y(8, 0);
        scales[0] = 0x4201;  // fp16 3 + 2^-9
        QuantGemvParams p;
        p.format = QuantFormat::awq_int4, p.x = x.data(), p.y = y.data(), p.n = 8, p.k = 1, p.group_size = 1;
        p.qweight = qweight.data(), p.qzeros = qzeros.data(), p.scales = scales.data();
        const auto w = ref::quant_mma_dequantize(p);
        QCOMPARE(w[0], 9.0f);
        for (int c = 1; c < 8; ++c) QCOMPARE(w[std::size_t(c)], 3.0f);
        ref::quant_mma(p);
        QCOMPARE(ref::bf16_to_f32(y[0]), 9.0f);
        QCOMPARE(ref::bf16_to_f32(y[1]), 3.0f);
    }

    // The fused shrink (lora_shrink) writes what sgmv_shrink's twin writes, for a launch's own tokens only: a launch
    // over step tokens 1-2 (lora_token0 1) of a 3-token step whose tokens are on slot 1, the base, slot 2.
    void fused_shrink_matches_sgmv_twin() {
        constexpr int k = 64, n = 16, rank = 4, tokens = 3;
        std::mt19937 rng(5);
        const QuantCase c(QuantFormat::awq_int4, n, k, 32, false, false, Fp8Scaling::block128, 9);
        const auto x = random_bf16(rng, std::size_t(tokens) * k);
        const std::vector<uint16_t> a0 = random_bf16(rng, 2 * rank * k), a1 = random_bf16(rng, 2 * rank * k);
        const std::vector<uint16_t> bt0 = random_bf16(rng, 2 * rank * k), bt1 = random_bf16(rng, 2 * rank * k);
        const std::vector<int32_t> ranks0{0, 4, 2}, ranks1{0, 3, 0}, indptr{0, 1, 2, 3}, seg_slots{1, 0, 2};
        const std::vector<float> scales{0.f, 0.5f, 2.f};
        SgmvParams l;
        l.x = x.data(), l.x_row_stride = k, l.in_features = k, l.seg_indptr = indptr.data(),
        l.seg_slot = seg_slots.data();
        l.n_segs = 3, l.max_seg_len = 1, l.max_rank = rank, l.slot_stride = int64_t(rank) * k, l.n_slices = 2;
        l.slices[0] = {a0.data(), bt0.data(), ranks0.data(), scales.data(), 0, 8};
        l.slices[1] = {a1.data(), bt1.data(), ranks1.data(), scales.data(), 8, 8};
        std::vector<float> want(std::size_t(tokens) * 2 * rank, -7.f), got = want;
        l.xa = want.data();
        ref::sgmv_shrink(l);
        for (std::size_t i = 0; i < std::size_t(2 * rank); ++i) want[i] = -7.f;  // token 0 is not the launch's

        std::vector<uint16_t> y(std::size_t(2) * n);
        QuantGemvParams p = c.params(x.data() + k, k, y.data(), n, 2, c.qweight.data(), c.qzeros.data(), c.s16.data(),
                                     nullptr, nullptr, nullptr, nullptr);
        l.xa = got.data();
        p.lora = l, p.lora_expand = p.lora_shrink = true, p.lora_token0 = 1;
        ref::quant_mma(p);
        QCOMPARE(got, want);
        QVERIFY(std::count(got.begin(), got.end(), -7.f) < int(got.size()));  // something was written
    }
};

QTEST_GUILESS_MAIN(TstQuantTwin)
#include "tst_quant_twin.moc"
