// Reference twin of the skinny GEMM (kernels/gemv.cu): per token and output row a double-precision dot,
// then bias, then the LoRA delta through f32 xa rows (as the kernel publishes them), then SwiGLU, rounded
// once at the end — the kernel keeps every intermediate in f32, so it never rounds gate/up to bf16.
#include <cmath>
#include <vector>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::ref {

namespace {

int token_slot(const SgmvParams& s, int t) {
    for (int i = 0; i < s.n_segs; ++i)
        if (t < s.seg_indptr[i + 1]) return t >= s.seg_indptr[i] ? s.seg_slot[i] : 0;
    return 0;
}

double dot(const uint16_t* a, const uint16_t* b, int n) {
    double d = 0;
    for (int k = 0; k < n; ++k) d += double(bf16_to_f32(a[k])) * bf16_to_f32(b[k]);
    return d;
}

// Row c of token t before the activation: x.w[c] + bias[c] + scale * xa.Bt[:, c].
float pre_activation(const GemvParams& p, int t, int c, int slot) {
    const uint16_t* x = p.x + t * p.x_row_stride;
    double v = dot(x, p.w + int64_t(c) * p.in, p.in);
    if (p.bias) v += bf16_to_f32(p.bias[c]);
    if (p.lora && slot > 0) {
        const SgmvParams& s = p.sgmv;
        for (int j = 0; j < s.n_slices; ++j) {
            const LoraSlice& sl = s.slices[j];
            const int col = c - sl.out_offset;
            if (col < 0 || col >= sl.out_features) continue;
            const float* xa = s.xa + int64_t(t) * s.n_slices * s.max_rank + j * s.max_rank;
            const uint16_t* bt = sl.bt + int64_t(slot - 1) * s.slot_stride + col;
            double d = 0;
            for (int r = 0; r < sl.ranks[slot]; ++r) d += double(xa[r]) * bf16_to_f32(bt[int64_t(r) * sl.out_features]);
            v += sl.scales[slot] * d;
            break;
        }
    }
    return float(v);
}

}  // namespace

void gemv(const GemvParams& p) {
    if (p.lora) {  // xa first, as the kernel's producer blocks do
        const SgmvParams& s = p.sgmv;
        for (int t = 0; t < p.n_tokens; ++t) {
            const int slot = token_slot(s, t);
            if (slot <= 0) continue;
            for (int j = 0; j < s.n_slices; ++j)
                for (int r = 0; r < s.slices[j].ranks[slot]; ++r) {
                    const uint16_t* a = s.slices[j].a + int64_t(slot - 1) * s.slot_stride + int64_t(r) * p.in;
                    s.xa[int64_t(t) * s.n_slices * s.max_rank + j * s.max_rank + r] =
                        float(dot(p.x + t * p.x_row_stride, a, p.in));
                }
        }
    }
    const int cols = p.swiglu ? p.out_rows / 2 : p.out_rows;
    for (int t = 0; t < p.n_tokens; ++t) {
        const int slot = p.lora ? token_slot(p.sgmv, t) : 0;
        for (int c = 0; c < cols; ++c) {
            float v = pre_activation(p, t, c, slot);
            if (p.swiglu) {
                float u = pre_activation(p, t, c + cols, slot);
                v = v / (1.0f + std::exp(-v)) * u;
            }
            if (p.f32_out)
                static_cast<float*>(p.y)[t * p.y_row_stride + c] = v;
            else
                static_cast<uint16_t*>(p.y)[t * p.y_row_stride + c] = f32_to_bf16(v);
        }
    }
}

}  // namespace loradesk::kernels::ref
