// Reference twins of the SGMV LoRA kernels: per segment, per token, the shrink x.A^T into f32 and the
// expand y += scale * xa.B^T (or that term into delta), touching only each slot's real rank.
#include <vector>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::ref {

void sgmv_shrink(const SgmvParams& p) {
    for (int seg = 0; seg < p.n_segs; ++seg) {
        int slot = p.seg_slot[seg];
        if (slot <= 0) continue;
        for (int j = 0; j < p.n_slices; ++j) {
            const LoraSlice& sl = p.slices[j];
            int rank = sl.ranks[slot];
            const uint16_t* a = sl.a + int64_t(slot - 1) * p.slot_stride;
            for (int t = p.seg_indptr[seg]; t < p.seg_indptr[seg + 1]; ++t) {
                const uint16_t* x = p.x + t * p.x_row_stride;
                for (int r = 0; r < rank; ++r) {
                    double dot = 0;
                    for (int c = 0; c < p.in_features; ++c)
                        dot += double(bf16_to_f32(x[c])) * bf16_to_f32(a[int64_t(r) * p.in_features + c]);
                    p.xa[int64_t(t) * p.n_slices * p.max_rank + j * p.max_rank + r] = float(dot);
                }
            }
        }
    }
}

void sgmv_expand(const SgmvParams& p) {
    for (int seg = 0; seg < p.n_segs; ++seg) {
        int slot = p.seg_slot[seg];
        for (int j = 0; j < p.n_slices; ++j) {
            const LoraSlice& sl = p.slices[j];
            int rank = slot <= 0 ? 0 : sl.ranks[slot];
            if (rank == 0) {
                if (p.delta)  // no adapter here: a zero delta
                    for (int t = p.seg_indptr[seg]; t < p.seg_indptr[seg + 1]; ++t)
                        for (int c = 0; c < sl.out_features; ++c)
                            p.delta[t * p.y_row_stride + sl.out_offset + c] = 0.0f;
                continue;
            }
            float scale = sl.scales[slot];
            const uint16_t* bt = sl.bt + int64_t(slot - 1) * p.slot_stride;
            for (int t = p.seg_indptr[seg]; t < p.seg_indptr[seg + 1]; ++t) {
                const float* xa = p.xa + int64_t(t) * p.n_slices * p.max_rank + j * p.max_rank;
                for (int c = 0; c < sl.out_features; ++c) {
                    double delta = 0;
                    for (int r = 0; r < rank; ++r)
                        delta += double(xa[r]) * bf16_to_f32(bt[int64_t(r) * sl.out_features + c]);
                    const int64_t at = t * p.y_row_stride + sl.out_offset + c;
                    if (p.delta)
                        p.delta[at] = scale * float(delta);
                    else
                        p.y[at] = f32_to_bf16(bf16_to_f32(p.y[at]) + scale * float(delta));
                }
            }
        }
    }
}

void sgmv_expand_swiglu(const SgmvParams& p, uint16_t* act) {
    const int inter = p.slices[0].out_features;
    const int64_t n = p.n_segs > 0 ? p.seg_indptr[p.n_segs] : 0;
    std::vector<uint16_t> y(p.y, p.y + n * p.y_row_stride);  // the expand's y, on a copy: y itself is not written
    SgmvParams q = p;
    q.y = y.data();
    sgmv_expand(q);
    for (int seg = 0; seg < p.n_segs; ++seg)
        for (int t = p.seg_indptr[seg]; t < p.seg_indptr[seg + 1]; ++t)
            silu_mul(y.data() + int64_t(t) * p.y_row_stride, nullptr, 1, inter, act + int64_t(t) * inter);
}

}  // namespace loradesk::kernels::ref
