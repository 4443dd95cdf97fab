// Reference twins of the element-wise kernels: embedding gather, residual add + RMSNorm, rotary
// embedding with q/k norm and the paged K/V write, SiLU*mul, bias add, argmax, and the inv_freq table.
#include <cmath>
#include <cstring>
#include <limits>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::ref {

float bf16_to_f32(uint16_t v) {
    uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) return uint16_t((bits >> 16) | 0x40);
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t((bits + rounding) >> 16);
}

std::vector<float> rope_inv_freq(int head_dim, float theta, const RopeScalingSpec& s) {
    const double kPi = 3.14159265358979323846;
    std::vector<float> out(head_dim / 2);
    for (int i = 0; i < head_dim / 2; ++i) {
        double inv = 1.0 / std::pow(double(theta), double(2 * i) / head_dim);
        if (s.kind == RopeKind::linear) {
            inv /= s.factor;
        } else if (s.kind == RopeKind::llama3) {
            double old_len = s.original_max_position_embeddings;
            double low_wavelen = old_len / s.low_freq_factor;
            double high_wavelen = old_len / s.high_freq_factor;
            double wavelen = 2 * kPi / inv;
            if (wavelen > low_wavelen) {
                inv /= s.factor;
            } else if (wavelen >= high_wavelen) {
                double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
                inv = (1 - smooth) * inv / s.factor + smooth * inv;
            }
        }
        out[i] = float(inv);
    }
    return out;
}

void embedding_gather(const uint16_t* table, const int32_t* ids, int n_tokens, int hidden, int vocab, float* out) {
    for (int t = 0; t < n_tokens; ++t) {
        int id = ids[t];
        for (int c = 0; c < hidden; ++c)
            out[int64_t(t) * hidden + c] =
                (id >= 0 && id < vocab) ? bf16_to_f32(table[int64_t(id) * hidden + c]) : 0.0f;
    }
}

namespace {

// x[i] with a pending LoRA delta rounded in, as the expand would have stored it.
float with_delta(const uint16_t* x, const float* delta, int64_t i) {
    return delta ? bf16_to_f32(f32_to_bf16(bf16_to_f32(x[i]) + delta[i])) : bf16_to_f32(x[i]);
}

}  // namespace

void add_rmsnorm(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight, const int32_t* rows,
                 int n_rows, int hidden, float eps, uint16_t* out) {
    for (int i = 0; i < n_rows; ++i) {
        int64_t r = rows ? rows[i] : i;
        float* h = residual + r * hidden;
        if (x)
            for (int c = 0; c < hidden; ++c) h[c] += with_delta(x, x_delta, r * hidden + c);
        double ss = 0;
        for (int c = 0; c < hidden; ++c) ss += double(h[c]) * h[c];
        float inv = float(1.0 / std::sqrt(ss / hidden + eps));
        for (int c = 0; c < hidden; ++c)
            out[int64_t(i) * hidden + c] = f32_to_bf16(h[c] * inv * bf16_to_f32(weight[c]));
    }
}

namespace {

// Normalises (optional) and rotates one head of head_dim values in place, in f32.
void norm_rotate_head(float* v, int head_dim, const uint16_t* norm, float eps, const float* inv_freq, int pos) {
    if (norm) {
        double ss = 0;
        for (int d = 0; d < head_dim; ++d) ss += double(v[d]) * v[d];
        float inv = float(1.0 / std::sqrt(ss / head_dim + eps));
        for (int d = 0; d < head_dim; ++d) v[d] = v[d] * inv * bf16_to_f32(norm[d]);
    }
    int half = head_dim / 2;
    for (int i = 0; i < half; ++i) {
        float angle = float(pos) * inv_freq[i];
        float c = std::cos(angle), s = std::sin(angle);
        float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x2 * c + x1 * s;
    }
}

}  // namespace

void rope_kv_write(const RopeKvParams& p) {
    const int hd = p.head_dim;
    std::vector<float> head(hd);
    for (int t = 0; t < p.n_tokens; ++t) {
        uint16_t* row = p.qkv + int64_t(t) * p.qkv_row_stride;
        for (int h = 0; h < p.n_heads + 2 * p.n_kv_heads; ++h) {
            uint16_t* src = row + int64_t(h) * hd;
            const float* delta = p.qkv_delta ? p.qkv_delta + t * p.qkv_row_stride + int64_t(h) * hd : nullptr;
            for (int d = 0; d < hd; ++d) head[d] = with_delta(src, delta, d);
            bool is_q = h < p.n_heads, is_k = !is_q && h < p.n_heads + p.n_kv_heads;
            if (is_q || is_k)
                norm_rotate_head(head.data(), hd, is_q ? p.q_norm : p.k_norm, p.norm_eps, p.inv_freq, p.positions[t]);
            if (is_q) {
                for (int d = 0; d < hd; ++d) src[d] = f32_to_bf16(head[d]);
                continue;
            }
            int kvh = is_k ? h - p.n_heads : h - p.n_heads - p.n_kv_heads;
            uint16_t* dst = (is_k ? p.k_pages : p.v_pages) + (int64_t(p.kv_slots[t]) * p.n_kv_heads + kvh) * hd;
            for (int d = 0; d < hd; ++d) dst[d] = f32_to_bf16(head[d]);
        }
    }
}

void silu_mul(const uint16_t* gate_up, const float* delta, int n_tokens, int inter, uint16_t* out) {
    for (int t = 0; t < n_tokens; ++t)
        for (int c = 0; c < inter; ++c) {
            float g = with_delta(gate_up, delta, int64_t(t) * 2 * inter + c);
            float u = with_delta(gate_up, delta, int64_t(t) * 2 * inter + inter + c);
            out[int64_t(t) * inter + c] = f32_to_bf16(g / (1.0f + std::exp(-g)) * u);
        }
}

void bias_add(uint16_t* y, int64_t y_row_stride, const uint16_t* bias, int n_tokens, int cols) {
    for (int t = 0; t < n_tokens; ++t)
        for (int c = 0; c < cols; ++c) {
            uint16_t& v = y[t * y_row_stride + c];
            v = f32_to_bf16(bf16_to_f32(v) + bf16_to_f32(bias[c]));
        }
}

void gather_columns(const uint16_t* x, int64_t x_row_stride, const int32_t* order, int n_tokens, int cols,
                    uint16_t* out) {
    for (int t = 0; t < n_tokens; ++t)
        for (int i = 0; i < cols; ++i) out[int64_t(t) * cols + i] = x[t * x_row_stride + order[i]];
}

void argmax(const float* logits, int n_rows, int vocab, int32_t* out) {
    for (int r = 0; r < n_rows; ++r) {
        const float* row = logits + int64_t(r) * vocab;
        int best = 0;
        float best_v = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < vocab; ++c)
            if (row[c] > best_v) best_v = row[c], best = c;
        out[r] = best;
    }
}

void masked_argmax(const float* logits, int n_rows, int vocab, const uint32_t* masks, const int32_t* mask_of_row,
                   int mask_words, int32_t* out) {
    for (int r = 0; r < n_rows; ++r) {
        const float* row = logits + int64_t(r) * vocab;
        const uint32_t* m = mask_of_row[r] < 0 ? nullptr : masks + int64_t(mask_of_row[r]) * mask_words;
        // As the device kernel: the first largest value above -FLT_MAX (NaN and -inf never win).
        int best = INT32_MAX;
        float best_v = -std::numeric_limits<float>::max();
        for (int c = 0; c < vocab; ++c) {
            if (m && (c >= mask_words * 32 || !(m[c >> 5] >> (c & 31) & 1u))) continue;
            if (row[c] > best_v) best_v = row[c], best = c;
        }
        out[r] = best == INT32_MAX ? 0 : best;
    }
}

}  // namespace loradesk::kernels::ref
