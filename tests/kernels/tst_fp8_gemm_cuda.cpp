// The fp8 GEMM (kernels/fp8_gemm.h): the activation quantization against its twin bit for bit, per 128 columns and
// per token (values across e4m3's whole range, subnormals, all-zero blocks, a partial last block, padded rows), then
// cuBLASLt's scaled GEMM against ref::fp8_gemm for block-scaled and per-channel weights at decode and
// prefill token counts (odd ones included, since the activation scales are token-contiguous), into a column slice of
// a wider y whose other columns must stay untouched; then the shapes it must refuse. Skipped where cuBLASLt has no
// block-scaled fp8 kernels (before sm_90). Label cuda.
#include <QtTest>
#include <cmath>
#include <cstring>
#include <random>

#include "device_buffer.h"
#include "fp8_gemm.h"
#include "kernel_test_util.h"
#include "ref/ref_kernels.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

// bf16 values whose blocks span e4m3's range after scaling: magnitudes from 2^-20 to 2^8 with random signs, a few
// exact zeros, and block 1 of every row all zero.
std::vector<uint16_t> spread_bf16(std::mt19937& rng, int rows, int64_t stride, int k) {
    std::uniform_real_distribution<float> exp(-20.0f, 8.0f), unit(0.0f, 1.0f);
    std::vector<uint16_t> x(std::size_t(rows) * std::size_t(stride), 0x7fc0);  // NaN padding must not be read
    for (int t = 0; t < rows; ++t)
        for (int c = 0; c < k; ++c) {
            float v = unit(rng) < 0.05f ? 0.0f : std::exp2(exp(rng)) * (unit(rng) < 0.5f ? -1.0f : 1.0f);
            if (c >= 128 && c < 256) v = 0.0f;
            x[std::size_t(t) * std::size_t(stride) + std::size_t(c)] = ref::f32_to_bf16(v);
        }
    return x;
}

std::vector<uint8_t> random_e4m3(std::mt19937& rng, std::size_t n) {
    std::uniform_int_distribution<int> code(0, 255);
    std::vector<uint8_t> v(n);
    for (auto& b : v) {
        b = uint8_t(code(rng));
        if ((b & 0x7f) == 0x7f) b = 0x3e;  // no NaN weights
    }
    return v;
}

}  // namespace

class TstFp8GemmCuda : public QObject {
    Q_OBJECT
    void* ws = nullptr;
    static constexpr std::size_t kWs = std::size_t(32) << 20;
    Fp8Gemm gemm;

  private slots:
    void initTestCase() { cuda_check(cudaMalloc(&ws, kWs), "cudaMalloc"); }
    void cleanupTestCase() { cudaFree(ws); }

    void quantize_rows_matches_twin_bit_for_bit() {
        std::mt19937 rng(3);
        for (int per_token : {0, 1})
            for (int tokens : {1, 5, 33})
                for (int k : {128, 4096, 4112}) {
                    const int64_t stride = k + 64;
                    const int block_cols = per_token ? k : 128;
                    const int ld = fp8_act_scale_ld(tokens) + 3, blocks = (k + block_cols - 1) / block_cols;
                    const auto x = spread_bf16(rng, tokens, stride, k);
                    std::vector<uint8_t> want_q(std::size_t(fp8_gemm_rows(tokens)) * k);
                    std::vector<float> want_s(std::size_t(blocks) * ld, -1.0f);
                    ref::fp8_quantize_rows(x.data(), stride, tokens, k, want_q.data(), want_s.data(), ld, block_cols);
                    DeviceBuffer<uint16_t> dx(x);
                    DeviceBuffer<uint8_t> dq(std::vector<uint8_t>(want_q.size(), 0x55));  // padding rows must be zeroed
                    DeviceBuffer<float> ds(std::vector<float>(want_s.size(), -1.0f));
                    cuda_check(
                        fp8_quantize_rows(dx.get(), stride, tokens, k, dq.get(), ds.get(), ld, block_cols, nullptr),
                        "quantize");
                    const auto got_q = dq.download();
                    const auto got_s = ds.download();
                    for (std::size_t i = 0; i < want_s.size(); ++i)
                        if (std::memcmp(&got_s[i], &want_s[i], 4) != 0)
                            QFAIL(qPrintable(QString("block %6, tokens %1 k %2: scale %3 is %4, twin %5")
                                                 .arg(tokens)
                                                 .arg(k)
                                                 .arg(i)
                                                 .arg(double(got_s[i]))
                                                 .arg(double(want_s[i]))
                                                 .arg(block_cols)));
                    for (std::size_t i = 0; i < want_q.size(); ++i)
                        if (got_q[i] != want_q[i])
                            QFAIL(qPrintable(
                                QString("block %7, tokens %1 k %2: byte %3 is 0x%4, twin 0x%5 (x %6)")
                                    .arg(tokens)
                                    .arg(k)
                                    .arg(i)
                                    .arg(got_q[i], 0, 16)
                                    .arg(want_q[i], 0, 16)
                                    .arg(double(ref::bf16_to_f32(
                                        x[(i / std::size_t(k)) * std::size_t(stride) + i % std::size_t(k)])))));
                    if (!per_token && blocks > 1) QCOMPARE(want_s[1 * std::size_t(ld)], 1.0f);  // the all-zero block
                }
    }

    // Every scaling the runner hands over must run on the H100 (sm_90): block-scaled (Qwen3-FP8, DeepSeek) and
    // per-channel (llm-compressor's FP8_DYNAMIC; per-tensor packs as per-channel) weights, x per 128 columns or per
    // token.
    void gemm_matches_twin_data() {
        QTest::addColumn<int>("scaling");
        QTest::newRow("block128") << int(Fp8Scaling::block128);
        QTest::newRow("per_channel") << int(Fp8Scaling::per_channel);
    }
    void gemm_matches_twin() {
        QFETCH(int, scaling);
        if (!gemm.init(ws, kWs)) QSKIP("cuBLASLt has no block-scaled fp8 GEMM on this GPU (needs sm_90)");
        const auto w_scaling = Fp8Scaling(scaling);
        const bool block = w_scaling == Fp8Scaling::block128;
        std::mt19937 rng(7);
        struct Case {
            int tokens, n, k;
        };
        for (const Case c : {Case{1, 256, 512}, Case{5, 384, 1024}, Case{8, 128, 4096}, Case{33, 640, 2048},
                             Case{64, 1024, 512}, Case{300, 256, 1536}}) {
            const int col0 = 128, ys = c.n + 256;  // y's columns [col0, col0 + n) of a wider row
            const int rows = fp8_gemm_rows(c.tokens), ld = fp8_act_scale_ld(c.tokens);
            const int block_cols = fp8_act_block_cols(w_scaling, c.k);
            const auto x = random_bf16(rng, std::size_t(c.tokens) * c.k, -3.0f, 3.0f);
            std::vector<uint8_t> xq(std::size_t(rows) * c.k);
            std::vector<float> xs(std::size_t(c.k / block_cols) * ld);
            ref::fp8_quantize_rows(x.data(), c.k, c.tokens, c.k, xq.data(), xs.data(), ld, block_cols);
            const auto w = random_e4m3(rng, std::size_t(c.n) * c.k);
            const std::size_t n_scales = block                                  ? std::size_t(c.n / 128) * (c.k / 128)
                                         : w_scaling == Fp8Scaling::per_channel ? std::size_t(c.n)
                                                                                : 1;
            const auto wsc = random_f32(rng, n_scales, 1e-3f, 4e-3f);
            std::vector<uint16_t> want(std::size_t(rows) * ys, 0x4321);
            Fp8GemmParams p;
            p.w_scaling = w_scaling;
            p.w = w.data(), p.w_scale = wsc.data(), p.xq = xq.data(), p.x_scale = xs.data(), p.y = want.data() + col0;
            p.y_row_stride = ys, p.n_tokens = c.tokens, p.n = c.n, p.k = c.k;
            ref::fp8_gemm(p);
            DeviceBuffer<uint8_t> dw(w), dxq(xq);
            DeviceBuffer<float> dwsc(wsc), dxs(xs);
            DeviceBuffer<uint16_t> dy(std::vector<uint16_t>(want.size(), 0x4321));
            p.w = dw.get(), p.w_scale = dwsc.get(), p.xq = dxq.get(), p.x_scale = dxs.get(), p.y = dy.get() + col0;
            QVERIFY(fp8_gemm_supported(p));
            QVERIFY2(gemm.takes(p),
                     qPrintable(
                         QString("cuBLASLt has no algorithm for %1 tokens n %2 k %3").arg(c.tokens).arg(c.n).arg(c.k)));
            cuda_check(gemm.run(p, nullptr), "fp8 gemm");
            cuda_check(cudaDeviceSynchronize(), "fp8 gemm");
            const auto got = dy.download();
            std::vector<float> g, r;
            for (int t = 0; t < rows; ++t)
                for (int col = 0; col < ys; ++col) {
                    const std::size_t i = std::size_t(t) * ys + col;
                    if (col < col0 || col >= col0 + c.n) {
                        if (got[i] != 0x4321)
                            QFAIL(qPrintable(
                                QString("token %1: column %2 outside the slice was written").arg(t).arg(col)));
                        continue;
                    }
                    if (t >= c.tokens) {  // padding rows: zero
                        if (got[i] != 0)
                            QFAIL(qPrintable(QString("padding row %1 column %2 is not zero").arg(t).arg(col)));
                        continue;
                    }
                    g.push_back(ref::bf16_to_f32(got[i])), r.push_back(ref::bf16_to_f32(want[i]));
                }
            const double err = rel_l2(g, r);
            qInfo("tokens %d n %d k %d: rel l2 %.2e, max abs %.3g", c.tokens, c.n, c.k, err, max_abs_diff(g, r));
            QVERIFY2(err < 4e-3,
                     qPrintable(QString("tokens %1 n %2 k %3: rel l2 %4").arg(c.tokens).arg(c.n).arg(c.k).arg(err)));
        }
    }

    void refuses_other_shapes() {
        Fp8GemmParams p;
        uint8_t* d8 = static_cast<uint8_t*>(ws);
        p.w = d8, p.xq = d8, p.w_scale = static_cast<float*>(ws), p.x_scale = static_cast<float*>(ws);
        p.y = static_cast<uint16_t*>(ws), p.n_tokens = 4, p.n = 256, p.k = 512, p.y_row_stride = 256;
        QVERIFY(fp8_gemm_supported(p));
        auto refused = [&](auto edit) {
            Fp8GemmParams q = p;
            edit(q);
            return !fp8_gemm_supported(q) && gemm.run(q, nullptr) == cudaErrorInvalidValue;
        };
        QVERIFY(refused([](Fp8GemmParams& q) { q.n = 200; }));  // not whole 128-column blocks
        QVERIFY(refused([](Fp8GemmParams& q) { q.w_scaling = Fp8Scaling::per_channel, q.n = 200; }));  // n % 16
        QVERIFY(refused([](Fp8GemmParams& q) { q.w_scaling = Fp8Scaling::per_tensor; }));  // packed per channel instead
        QVERIFY(refused([](Fp8GemmParams& q) { q.k = 384; }));             // scale rows not a multiple of 4
        QVERIFY(refused([](Fp8GemmParams& q) { q.y_row_stride = 260; }));  // misaligned y rows
        QVERIFY(refused([](Fp8GemmParams& q) { q.n_tokens = 0; }));
        QVERIFY(refused([](Fp8GemmParams& q) { q.xq += 8; }));
        QCOMPARE(
            fp8_quantize_rows(static_cast<uint16_t*>(ws), 100, 1, 100, d8, static_cast<float*>(ws), 4, 128, nullptr),
            cudaErrorInvalidValue);  // k % 16
        QCOMPARE(
            fp8_quantize_rows(static_cast<uint16_t*>(ws), 256, 1, 256, d8, static_cast<float*>(ws), 4, 64, nullptr),
            cudaErrorInvalidValue);  // blocks of 128 or whole rows only
    }
};

QTEST_APPLESS_MAIN(TstFp8GemmCuda)
#include "tst_fp8_gemm_cuda.moc"
