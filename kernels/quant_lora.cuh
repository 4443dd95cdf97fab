// The LoRA expand that the quantized kernels (quant_gemv.cu, quant_mma.cu) add in their epilogue: for token t and
// site column sc, which slot and slice apply (QuantGemvParams::lora, quant_params.h) and the share of the rank sum
// a block adds; and one warp's row of the shrink that quant_mma runs in its own launch (lora_shrink). Private to
// kernels/.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "quant_params.h"

namespace loradesk::kernels::detail {

__device__ __forceinline__ float bf(const uint16_t* p) {
    return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

// Slot of step token t: segments are contiguous token ranges; tokens past the last segment use no adapter.
__device__ __forceinline__ int lora_slot(const SgmvParams& s, int t) {
    int slot = 0;
    for (int g = 0; g < s.n_segs; ++g)
        if (t >= s.seg_indptr[g] && t < s.seg_indptr[g + 1]) slot = s.seg_slot[g];
    return slot;
}

// What token t (of this launch) and site column sc need from the adapter of t's segment: the slice holding sc, its
// xa row, its B^T column and the slot's rank and scale. False when t is on the base model or its adapter leaves
// the slice alone. The slice is picked with static indices so the kernel parameters are never indexed
// dynamically (no local-memory copy).
struct LoraRef {
    const float* xa;     // [rank]
    const uint16_t* bt;  // row r at bt + r * stride, this column
    int64_t stride;
    int rank;
    float scale;
    int cols_left;  // columns of the slice from this one on
};

__device__ __forceinline__ bool lora_ref(const QuantGemvParams& p, int t, int sc, LoraRef& ref) {
    const SgmvParams& s = p.lora;
    t += p.lora_token0;
    const int slot = lora_slot(s, t);
    if (slot <= 0) return false;
#pragma unroll
    for (int j = 0; j < kMaxLoraSlices; ++j) {
        const LoraSlice& sl = s.slices[j];
        if (j >= s.n_slices || sc < sl.out_offset || sc >= sl.out_offset + sl.out_features) continue;
        ref.rank = min(sl.ranks[slot], s.max_rank);
        ref.scale = sl.scales[slot];
        ref.xa = s.xa + int64_t(t) * s.n_slices * s.max_rank + j * s.max_rank;
        ref.bt = sl.bt + int64_t(slot - 1) * s.slot_stride + (sc - sl.out_offset);
        ref.stride = sl.out_features;
        ref.cols_left = sl.out_offset + sl.out_features - sc;
        return ref.rank > 0;
    }
    return false;
}

// scale * sum over ranks r = part, part + parts, ... of xa[r] * B^T[r, c] for token t and output column c of this
// matrix: `parts` blocks that each add their share cover the whole expand (parts = 1: all of it). Neighbouring
// threads take neighbouring columns, so the B^T loads coalesce; the rank loop is unrolled so they are in flight
// at once.
__device__ __forceinline__ float lora_expand_share(const QuantGemvParams& p, int t, int c, int part, int parts) {
    LoraRef ref;
    if (!lora_ref(p, t, p.lora_col + c, ref)) return 0.f;
    float d = 0.f;
#pragma unroll 16
    for (int r = part; r < ref.rank; r += parts) d += __ldcg(ref.xa + r) * bf(ref.bt + r * ref.stride);
    return ref.scale * d;
}

// lora_expand_share of columns c .. c + 3 at once: one slot and slice lookup and one rank loop for the four where
// they share a slice (always, when slices start at multiples of 4), instead of four chains of dependent loads in a
// row at the end of every block.
__device__ __forceinline__ float4 lora_expand_share4(const QuantGemvParams& p, int t, int c, int part, int parts) {
    LoraRef ref;
    const bool on = lora_ref(p, t, p.lora_col + c, ref);
    if (on && ref.cols_left >= 4) {
        float4 d = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
        for (int r = part; r < ref.rank; r += parts) {
            const float x = __ldcg(ref.xa + r);
            const uint16_t* b = ref.bt + r * ref.stride;
            d.x += x * bf(b), d.y += x * bf(b + 1), d.z += x * bf(b + 2), d.w += x * bf(b + 3);
        }
        return make_float4(ref.scale * d.x, ref.scale * d.y, ref.scale * d.z, ref.scale * d.w);
    }
    if (on || lora_slot(p.lora, t + p.lora_token0) > 0)  // a slice edge inside the quad, or c in no slice
        return make_float4(lora_expand_share(p, t, c, part, parts), lora_expand_share(p, t, c + 1, part, parts),
                           lora_expand_share(p, t, c + 2, part, parts), lora_expand_share(p, t, c + 3, part, parts));
    return make_float4(0.f, 0.f, 0.f, 0.f);  // t on the base model
}

// Rank rows per warp of the fused shrink: each x load serves four A rows.
constexpr int kShrinkRanksPerWarp = 4;

// Warps of the fused shrink for n_tokens tokens (QuantGemvParams::lora_shrink).
__host__ __device__ constexpr int lora_shrink_warps(int n_tokens, int n_slices, int max_rank) {
    return n_tokens * n_slices * ((max_rank + kShrinkRanksPerWarp - 1) / kShrinkRanksPerWarp);
}

// One warp of the fused shrink: xa[token0 + t, j * max_rank + r] = x[t] . A_j[slot][r] for ranks r = 4q .. 4q + 3
// of warp id wid -> (t, j, q), q fastest; nothing for ranks past the slot's or tokens on the base model, whose xa
// the expand never reads. Each lane keeps two rounds of x and A loads (10 of 16 bytes) in flight; lane 0 stores
// the sums and fences them (lora_handover.cuh).
__device__ __forceinline__ void lora_shrink_warp(const QuantGemvParams& p, int wid, int lane) {
    constexpr int R = kShrinkRanksPerWarp;
    const SgmvParams& s = p.lora;
    const int quads = (s.max_rank + R - 1) / R, per_tok = s.n_slices * quads;
    const int t = wid / per_tok, j = wid % per_tok / quads, r0 = wid % quads * R;
    if (t >= p.n_tokens) return;
    const int slot = lora_slot(s, t + p.lora_token0);
    if (slot <= 0) return;
    const uint16_t* a = nullptr;
    const int32_t* ranks = nullptr;
#pragma unroll
    for (int jj = 0; jj < kMaxLoraSlices; ++jj)  // static indices, as lora_ref
        if (jj == j) a = s.slices[jj].a, ranks = s.slices[jj].ranks;
    const int rows = min(min(ranks[slot], s.max_rank) - r0, R);
    if (rows <= 0) return;
    a += int64_t(slot - 1) * s.slot_stride + int64_t(r0) * p.k;
    const uint16_t* x = p.x + int64_t(t) * p.x_row_stride;
    float acc[R] = {};
#pragma unroll 2
    for (int k = lane * 8; k < p.k; k += 32 * 8) {
        float xf[8];
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + k));
        const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 f = __bfloat1622float2(xh[e]);
            xf[2 * e] = f.x, xf[2 * e + 1] = f.y;
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
            if (i >= rows) break;
            const uint4 av = __ldcs(reinterpret_cast<const uint4*>(a + int64_t(i) * p.k + k));
            const __nv_bfloat162* ah = reinterpret_cast<const __nv_bfloat162*>(&av);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 f = __bfloat1622float2(ah[e]);
                acc[i] += f.x * xf[2 * e] + f.y * xf[2 * e + 1];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
    if (lane == 0) {
        float* out = s.xa + int64_t(t + p.lora_token0) * s.n_slices * s.max_rank + j * s.max_rank + r0;
#pragma unroll
        for (int i = 0; i < R; ++i)
            if (i < rows) out[i] = acc[i];
        __threadfence();  // visible device-wide before the block publishes the unit
    }
}

}  // namespace loradesk::kernels::detail
