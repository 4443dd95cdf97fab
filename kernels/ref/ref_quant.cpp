// Reference twin of kernels/quant_gemv.cu: unpacking written straight from the checkpoint layouts (see
// quant_params.h), independent of the kernel's bit tricks.
#include "ref/ref_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::ref {

float fp16_to_f32(uint16_t v) {
    const int sign = v >> 15, exp = (v >> 10) & 0x1f, mant = v & 0x3ff;
    float f;
    if (exp == 0)
        f = std::ldexp(float(mant), -24);
    else if (exp == 31)
        f = mant ? NAN : INFINITY;
    else
        f = std::ldexp(float(mant | 0x400), exp - 25);
    return sign ? -f : f;
}

float fp8_e4m3_to_f32(uint8_t v) {
    const int sign = v >> 7, exp = (v >> 3) & 0xf, mant = v & 0x7;
    float f;
    if (exp == 15 && mant == 7)
        f = NAN;
    else if (exp == 0)
        f = std::ldexp(float(mant), -9);
    else
        f = std::ldexp(float(mant | 8), exp - 10);
    return sign ? -f : f;
}

namespace {

int nibble(int32_t word, int i) { return int((uint32_t(word) >> (4 * i)) & 0xfu); }

int awq_nibble_of_column(int c) {  // inverse of kAwqOrder
    for (int i = 0; i < 8; ++i)
        if (kAwqOrder[i] == c) return i;
    return -1;
}

// An int4 weight as its integer (q - z) and its scale.
struct Int4Weight {
    int q_minus_z;
    float scale;
    float value() const { return float(q_minus_z) * scale; }
};

Int4Weight int4_weight(const QuantGemvParams& p, int n, int k) {
    const int packs = p.n / 8;
    if (p.format == QuantFormat::awq_int4) {
        const int i = awq_nibble_of_column(n % 8), g = k / p.group_size;
        const int q = nibble(p.qweight[int64_t(k) * packs + n / 8], i);
        const int z = nibble(p.qzeros[int64_t(g) * packs + n / 8], i);
        return {q - z, fp16_to_f32(p.scales[int64_t(g) * p.n + n])};
    }
    const int g = p.g_idx ? p.g_idx[k] : k / p.group_size;
    const int q = nibble(p.qweight[int64_t(k / 8) * p.n + n], k % 8);
    const int z = nibble(p.qzeros[int64_t(g) * packs + n / 8], n % 8) + (p.zero_plus_one ? 1 : 0);
    return {q - z, fp16_to_f32(p.scales[int64_t(g) * p.n + n])};
}

float fp8_scale(const QuantGemvParams& p, int n, int k) {
    switch (p.fp8_scaling) {
        case Fp8Scaling::per_tensor:
            return p.w_scale[0];
        case Fp8Scaling::per_channel:
            return p.w_scale[n];
        case Fp8Scaling::block128:
            return p.w_scale[int64_t(n / 128) * ((p.k + 127) / 128) + k / 128];
    }
    return NAN;
}

}  // namespace

std::vector<float> quant_dequantize(const QuantGemvParams& p) {
    std::vector<float> w(std::size_t(p.n) * p.k);
    for (int n = 0; n < p.n; ++n)
        for (int k = 0; k < p.k; ++k)
            w[std::size_t(n) * p.k + (p.k_order ? p.k_order[k] : k)] =
                p.format == QuantFormat::fp8_e4m3 ? fp8_e4m3_to_f32(p.w_fp8[int64_t(n) * p.k + k]) * fp8_scale(p, n, k)
                                                  : int4_weight(p, n, k).value();
    return w;
}

std::vector<float> quant_mma_dequantize(const QuantGemvParams& p) {
    std::vector<float> w(std::size_t(p.n) * p.k);
    const auto bf16_round = [](float v) { return bf16_to_f32(f32_to_bf16(v)); };
    for (int n = 0; n < p.n; ++n)
        for (int k = 0; k < p.k; ++k) {
            if (p.format == QuantFormat::fp8_e4m3) {
                w[std::size_t(n) * p.k + k] =
                    bf16_round(fp8_e4m3_to_f32(p.w_fp8[int64_t(n) * p.k + k]) * bf16_round(fp8_scale(p, n, k)));
                continue;
            }
            const Int4Weight q = int4_weight(p, n, k);
            w[std::size_t(n) * p.k + k] = bf16_round(float(q.q_minus_z) * bf16_round(q.scale));
        }
    return w;
}

namespace {

// Slot of step token t: the segment holding it, or 0 (the base model) past the last one.
int segment_slot(const SgmvParams& s, int t) {
    for (int g = 0; g < s.n_segs; ++g)
        if (t >= s.seg_indptr[g] && t < s.seg_indptr[g + 1]) return s.seg_slot[g];
    return 0;
}

}  // namespace

double quant_epilogue(const QuantGemvParams& p, int t, int n) {
    double add = p.bias ? double(bf16_to_f32(p.bias[n])) : 0.0;
    if (!p.lora_expand) return add;
    const SgmvParams& s = p.lora;
    t += p.lora_token0;
    const int slot = segment_slot(s, t);
    if (slot <= 0) return add;
    const int c = p.lora_col + n;
    for (int j = 0; j < s.n_slices; ++j) {
        const LoraSlice& sl = s.slices[j];
        if (c < sl.out_offset || c >= sl.out_offset + sl.out_features) continue;
        const int rank = std::min(sl.ranks[slot], s.max_rank);
        double d = 0;
        for (int r = 0; r < rank; ++r)
            d += double(s.xa[int64_t(t) * s.n_slices * s.max_rank + j * s.max_rank + r]) *
                 bf16_to_f32(
                     sl.bt[int64_t(slot - 1) * s.slot_stride + int64_t(r) * sl.out_features + c - sl.out_offset]);
        add += double(sl.scales[slot]) * d;
    }
    return add;
}

namespace {

// The fused shrink (lora_shrink): xa of this launch's tokens on an adapter from p.x over p.k, in double.
void shrink(const QuantGemvParams& p) {
    const SgmvParams& s = p.lora;
    for (int t = 0; t < p.n_tokens; ++t) {
        const int st = t + p.lora_token0, slot = segment_slot(s, st);
        if (slot <= 0) continue;
        for (int j = 0; j < s.n_slices; ++j) {
            const LoraSlice& sl = s.slices[j];
            for (int r = 0; r < std::min(sl.ranks[slot], s.max_rank); ++r) {
                const uint16_t* a = sl.a + int64_t(slot - 1) * s.slot_stride + int64_t(r) * p.k;
                double d = 0;
                for (int k = 0; k < p.k; ++k) d += double(bf16_to_f32(p.x[t * p.x_row_stride + k])) * bf16_to_f32(a[k]);
                s.xa[int64_t(st) * s.n_slices * s.max_rank + j * s.max_rank + r] = float(d);
            }
        }
    }
}

void multiply(const QuantGemvParams& p, const std::vector<float>& w) {
    if (p.lora_expand && p.lora_shrink) shrink(p);
    for (int t = 0; t < p.n_tokens; ++t)
        for (int n = 0; n < p.n; ++n) {
            double d = 0;
            for (int k = 0; k < p.k; ++k)
                d += double(bf16_to_f32(p.x[t * p.x_row_stride + k])) * w[std::size_t(n) * p.k + k];
            p.y[t * p.y_row_stride + n] = f32_to_bf16(float(d + quant_epilogue(p, t, n)));
        }
}

}  // namespace

void quant_gemv(const QuantGemvParams& p) { multiply(p, quant_dequantize(p)); }

void quant_mma(const QuantGemvParams& p) { multiply(p, quant_mma_dequantize(p)); }

uint8_t fp8_e4m3_from_f32(float v) {
    if (std::isnan(v)) return 0x7f;
    const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
    const float a = std::fabs(v);
    if (a >= 448.0f) return uint8_t(sign | 0x7e);  // 448 and past it (infinities too): the largest finite
    // The e4m3 grid near a: steps of 2^-9 below 2^-6 (subnormals), else 8 steps per binade; rint rounds to nearest
    // even on the grid, and a mantissa that rounds up to 8 carries into the next binade.
    int code;
    if (a < 0.015625f) {
        code = int(std::nearbyint(a * 512.0f));  // 8 is the smallest normal
    } else {
        int e = 0;
        const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
        const int steps = int(std::nearbyint((m * 2.0f - 1.0f) * 8.0f));
        code = ((e - 1 + 7) << 3) + steps;
    }
    return uint8_t(sign | code);
}

void fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                       int scale_ld, int block_cols) {
    for (int t = 0; t < fp8_gemm_rows(n_tokens); ++t)
        for (int b = 0; b * block_cols < k; ++b) {
            const int begin = b * block_cols, end = std::min(k, begin + block_cols);
            const auto value = [&](int c) { return t < n_tokens ? bf16_to_f32(x[t * x_row_stride + c]) : 0.0f; };
            float amax = 0.0f;
            for (int c = begin; c < end; ++c) amax = std::max(amax, std::fabs(value(c)));
            const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
            for (int c = begin; c < end; ++c) xq[int64_t(t) * k + c] = fp8_e4m3_from_f32(value(c) / s);
            x_scale[int64_t(b) * scale_ld + t] = s;
        }
}

void fp8_gemm(const Fp8GemmParams& p) {
    const int block_cols = fp8_act_block_cols(p.w_scaling, p.k), blocks = (p.k + block_cols - 1) / block_cols;
    const int ld = fp8_act_scale_ld(p.n_tokens);
    const auto w_scale = [&](int n, int b) {  // per_tensor is not a scaling of the GEMM (fp8_gemm.h)
        return p.w_scaling == Fp8Scaling::block128 ? p.w_scale[(n / 128) * ((p.k + 127) / 128) + b] : p.w_scale[n];
    };
    for (int t = 0; t < fp8_gemm_rows(p.n_tokens); ++t)
        for (int n = 0; n < p.n; ++n) {
            double d = 0;
            for (int b = 0; b < blocks; ++b) {
                double block = 0;
                for (int k = b * block_cols; k < std::min(p.k, (b + 1) * block_cols); ++k)
                    block += double(fp8_e4m3_to_f32(p.w[int64_t(n) * p.k + k])) *
                             fp8_e4m3_to_f32(p.xq[int64_t(t) * p.k + k]);
                d += block * w_scale(n, b) * p.x_scale[int64_t(b) * ld + t];
            }
            p.y[t * p.y_row_stride + n] = f32_to_bf16(float(d));
        }
}

}  // namespace loradesk::kernels::ref
