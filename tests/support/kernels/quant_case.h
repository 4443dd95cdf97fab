// Random quantized weights for the quantized-GEMV tests and bench: logical values (q, effective zero, fp16
// scale, fp8 bytes) and the same packed the way AutoAWQ / AutoGPTQ / fine-grained fp8 checkpoints store them.
// The packers follow the publishers' packing loops (forward), so the twin's unpacking is checked against them.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "quant_params.h"

namespace loradesk::kernels::test {

struct QuantCase {
    QuantFormat format = QuantFormat::awq_int4;
    int n = 0, k = 0, group = 128;
    bool act_order = false, zero_plus_one = false;
    Fp8Scaling scaling = Fp8Scaling::block128;

    // logical int4 weights
    std::vector<int> q;          // [n, k] 0..15
    std::vector<int> zero;       // [groups, n] effective zero (GPTQ v1: stored + 1)
    std::vector<uint16_t> s16;   // fp16 bits [groups, n]
    std::vector<int32_t> g_idx;  // [k] when act_order
    // packed
    std::vector<int32_t> qweight, qzeros;
    // fp8
    std::vector<uint8_t> w8;  // [n, k]
    std::vector<float> w_scale;

    int groups() const { return k / group; }
    int group_of(int kk) const { return act_order ? g_idx[std::size_t(kk)] : kk / group; }

    // fp16 with exponent field 8 (2^-7) and a random mantissa: exact, decoded below without the twin.
    static float fp16_value(uint16_t bits) {
        return std::ldexp(float((bits & 0x3ff) | 0x400), ((bits >> 10) & 31) - 25);
    }

    QuantCase(QuantFormat f, int n_, int k_, int g, bool act, bool zp1, Fp8Scaling sc, uint32_t seed)
        : format(f), n(n_), k(k_), group(g), act_order(act), zero_plus_one(zp1), scaling(sc) {
        std::mt19937 rng(seed);
        if (format == QuantFormat::fp8_e4m3) {
            std::uniform_int_distribution<int> byte(0, 255);
            w8.resize(std::size_t(n) * k);
            for (auto& b : w8) {
                do b = uint8_t(byte(rng));
                while ((b & 0x7f) == 0x7f || (b & 0x78) == 0x78);  // no NaN; |w| < 256 keeps y tame
            }
            const std::size_t n_scales = scaling == Fp8Scaling::per_tensor ? 1
                                         : scaling == Fp8Scaling::per_channel
                                             ? std::size_t(n)
                                             : std::size_t((n + 127) / 128) * ((k + 127) / 128);
            std::uniform_real_distribution<float> sd(0.001f, 0.004f);
            w_scale.resize(n_scales);
            for (auto& v : w_scale) v = sd(rng);
            return;
        }
        std::uniform_int_distribution<int> nib(0, 15), mant(0, 1023);
        q.resize(std::size_t(n) * k), zero.resize(std::size_t(groups()) * n), s16.resize(zero.size());
        for (auto& v : q) v = nib(rng);
        for (auto& v : zero) v = nib(rng) + (zero_plus_one ? 1 : 0);  // stored nibble 0..15
        for (auto& v : s16) v = uint16_t((8 << 10) | mant(rng));
        if (act_order) {
            std::vector<int32_t> perm(static_cast<std::size_t>(k));
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin(), perm.end(), rng);
            g_idx.resize(std::size_t(k));
            for (int i = 0; i < k; ++i) g_idx[std::size_t(i)] = perm[std::size_t(i)] / group;
        }
        pack();
    }

    void pack() {
        const int packs = n / 8;
        qzeros.assign(std::size_t(groups()) * packs, 0);
        if (format == QuantFormat::awq_int4) {  // AutoAWQ: column 8p + kAwqOrder[i] in bits 4i
            qweight.assign(std::size_t(k) * packs, 0);
            for (int p = 0; p < packs; ++p)
                for (int i = 0; i < 8; ++i) {
                    const int col = 8 * p + kAwqOrder[i];
                    for (int kk = 0; kk < k; ++kk)
                        qweight[std::size_t(kk) * packs + p] |=
                            int32_t(uint32_t(q[std::size_t(col) * k + kk]) << (4 * i));
                    for (int g = 0; g < groups(); ++g)
                        qzeros[std::size_t(g) * packs + p] |=
                            int32_t(uint32_t(zero[std::size_t(g) * n + col]) << (4 * i));
                }
            return;
        }
        // AutoGPTQ: rows 8r..8r+7 of column c in qweight[r, c] low nibble first; zeros (minus 1 in v1) by column.
        qweight.assign(std::size_t(k / 8) * n, 0);
        for (int kk = 0; kk < k; ++kk)
            for (int c = 0; c < n; ++c)
                qweight[std::size_t(kk / 8) * n + c] |= int32_t(uint32_t(q[std::size_t(c) * k + kk]) << (4 * (kk % 8)));
        for (int g = 0; g < groups(); ++g)
            for (int c = 0; c < n; ++c) {
                const int stored = zero[std::size_t(g) * n + c] - (zero_plus_one ? 1 : 0);
                qzeros[std::size_t(g) * packs + c / 8] |= int32_t((uint32_t(stored) & 0xfu) << (4 * (c % 8)));
            }
    }

    // Logical weight (int4 only), straight from q, zero and scale.
    float weight(int c, int kk) const {
        const int g = group_of(kk);
        return float(q[std::size_t(c) * k + kk] - zero[std::size_t(g) * n + c]) *
               fp16_value(s16[std::size_t(g) * n + c]);
    }

    // Parameters over the given buffers (host or device copies of this case's vectors).
    QuantGemvParams params(const uint16_t* x, int64_t x_stride, uint16_t* y, int64_t y_stride, int n_tokens,
                           const int32_t* d_qweight, const int32_t* d_qzeros, const uint16_t* d_scales,
                           const int32_t* d_gidx, const uint8_t* d_w8, const float* d_wscale, void* ws) const {
        QuantGemvParams p;
        p.format = format, p.x = x, p.x_row_stride = x_stride, p.y = y, p.y_row_stride = y_stride;
        p.n_tokens = n_tokens, p.n = n, p.k = k;
        p.qweight = d_qweight, p.qzeros = d_qzeros, p.scales = d_scales, p.g_idx = act_order ? d_gidx : nullptr;
        p.group_size = group, p.zero_plus_one = zero_plus_one;
        p.w_fp8 = d_w8, p.w_scale = d_wscale, p.fp8_scaling = scaling, p.workspace = ws;
        return p;
    }

    // Bytes the kernel must stream: weights, zeros, scales (and g_idx), as stored.
    double weight_bytes() const {
        if (format == QuantFormat::fp8_e4m3) return double(w8.size()) + 4.0 * double(w_scale.size());
        return 4.0 * double(qweight.size() + qzeros.size()) + 2.0 * double(s16.size()) + 4.0 * double(g_idx.size());
    }
};

}  // namespace loradesk::kernels::test
