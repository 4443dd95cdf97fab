// One randomized skinny-GEMM case for the gemv tests: weights, x rows with a padded stride, bias, and a
// LoRA set-up of several slots with odd ranks whose slices cover the output (q|k|v-like, gate|up-like or
// one module), tokens spread over segments that include the base model (slot 0).
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "kernel_test_util.h"

namespace loradesk::kernels::test {

struct GemvCase {
    int n = 1, in = 8, out = 2, n_slices = 0, max_rank = 40;  // ranks past 32: the epilogue's second chunk
    bool swiglu = false, bias = false, f32_out = false;
    std::vector<uint16_t> w, x, b;
    std::vector<std::vector<uint16_t>> a, bt;
    std::vector<int32_t> ranks{0, 5, 37, 1}, seg_indptr, seg_slot;
    std::vector<float> scales{0.0f, 2.0f, 0.5f, 1.5f}, xa;
    int offsets[kMaxLoraSlices] = {}, widths[kMaxLoraSlices] = {};
    int64_t x_stride = 0, slot_stride = 0;

    GemvCase(int n_, int in_, int out_, bool swiglu_, bool bias_, int slices, bool f32, uint32_t seed)
        : n(n_), in(in_), out(out_), n_slices(slices), swiglu(swiglu_), bias(bias_), f32_out(f32) {
        std::mt19937 rng(seed);
        x_stride = in + 8;  // rows of x are not packed
        w = random_bf16(rng, std::size_t(out) * in);
        x = random_bf16(rng, std::size_t(n) * x_stride);
        if (bias) b = random_bf16(rng, std::size_t(out));
        if (n_slices == 0) return;
        // Slice widths: swiglu -> gate | up halves; otherwise a big first slice and small trailing ones.
        int left = out;
        for (int j = 0; j < n_slices; ++j) {
            widths[j] = swiglu ? out / 2 : (j + 1 == n_slices ? left : std::max(1, out / (2 << j)));
            offsets[j] = out - left;
            left -= widths[j];
        }
        slot_stride = int64_t(max_rank) * std::max(in, out);
        for (int j = 0; j < n_slices; ++j)
            a.push_back(random_bf16(rng, 3 * slot_stride)), bt.push_back(random_bf16(rng, 3 * slot_stride));
        // Segments: token 0 on slot 1, then alternate base / slots 2, 3, 1 in runs of 1-2 tokens.
        seg_indptr = {0};
        const int order[] = {1, 0, 2, 3, 1};
        for (int t = 0, i = 0; t < n; ++i) {
            const int len = std::min(n - t, 1 + i % 2);
            seg_slot.push_back(order[i % 5]);
            seg_indptr.push_back(t += len);
        }
        xa.assign(std::size_t(n) * n_slices * max_rank, 0.0f);
    }

    // Params over the given pointers (host vectors for the twin, device copies for the kernel).
    GemvParams params(const uint16_t* w_, const uint16_t* x_, const uint16_t* b_, void* y, float* xa_,
                      const std::vector<const uint16_t*>& a_, const std::vector<const uint16_t*>& bt_,
                      const int32_t* ranks_, const float* scales_, const int32_t* segp, const int32_t* segs,
                      int32_t* sync) const {
        GemvParams p;
        p.w = w_, p.x = x_, p.x_row_stride = x_stride, p.n_tokens = n, p.in = in, p.out_rows = out;
        p.bias = bias ? b_ : nullptr, p.swiglu = swiglu, p.y = y, p.y_row_stride = out_cols() + 3, p.f32_out = f32_out;
        p.lora = n_slices > 0, p.sync = sync;
        SgmvParams& s = p.sgmv;
        s.x = x_, s.x_row_stride = x_stride, s.in_features = in, s.xa = xa_;
        s.seg_indptr = segp, s.seg_slot = segs, s.n_segs = int(seg_slot.size()), s.max_rank = max_rank;
        s.slot_stride = slot_stride, s.n_slices = n_slices;
        for (int j = 0; j < n_slices; ++j) s.slices[j] = {a_[j], bt_[j], ranks_, scales_, offsets[j], widths[j]};
        return p;
    }
    int out_cols() const { return swiglu ? out / 2 : out; }
    std::size_t y_elems() const { return std::size_t(n) * (out_cols() + 3); }
};

}  // namespace loradesk::kernels::test
