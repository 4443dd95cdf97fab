// The LoRA expand that the quantized kernels (quant_gemv.cu, quant_mma.cu) add in their epilogue: for token t and
// site column sc, which slot and slice apply (QuantGemvParams::lora, quant_params.h) and the share of the rank sum
// a block adds; and one warp's row of the shrink that quant_mma runs in its own launch (lora_shrink). Private to
// kernels/.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "lora_handover.cuh"
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

// lora_expand_share of columns c .. c + 3 at once, in two halves: lora_quad looks up the slot and slice (it reads
// only the step's segments and the adapter slots, so a kernel may call it before its PDL wait), lora_expand_quad
// runs one rank loop for the four columns where they share a slice (always, when slices start at multiples of 4).
// It replaces four chains of dependent loads in a row at the end of every block.
struct LoraQuad {
    LoraRef ref;
    int kind;  // 0: nothing to add (t on the base model); 1: the four columns in ref's slice; 2: column by column
};

__device__ __forceinline__ LoraQuad lora_quad(const QuantGemvParams& p, int t, int c) {
    LoraQuad q;
    const bool on = lora_ref(p, t, p.lora_col + c, q.ref);
    q.kind = on && q.ref.cols_left >= 4 ? 1 : on || lora_slot(p.lora, t + p.lora_token0) > 0 ? 2 : 0;
    return q;
}

__device__ __forceinline__ float4 lora_expand_quad(const QuantGemvParams& p, const LoraQuad& q, int t, int c, int part,
                                                   int parts) {
    if (q.kind == 1) {
        float4 d = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
        for (int r = part; r < q.ref.rank; r += parts) {
            const float x = __ldcg(q.ref.xa + r);
            const uint16_t* b = q.ref.bt + r * q.ref.stride;
            d.x += x * bf(b), d.y += x * bf(b + 1), d.z += x * bf(b + 2), d.w += x * bf(b + 3);
        }
        const float s = q.ref.scale;
        return make_float4(s * d.x, s * d.y, s * d.z, s * d.w);
    }
    if (q.kind == 2)  // a slice edge inside the quad, or c in no slice
        return make_float4(lora_expand_share(p, t, c, part, parts), lora_expand_share(p, t, c + 1, part, parts),
                           lora_expand_share(p, t, c + 2, part, parts), lora_expand_share(p, t, c + 3, part, parts));
    return make_float4(0.f, 0.f, 0.f, 0.f);
}

// Whether the operands of the fused shrink are there and fit its loads (host): the expand it feeds, the counters,
// and 16-byte loads of each slice's A rows. x's alignment and k are each kernel's own conditions.
inline bool lora_shrink_operands_ok(const QuantGemvParams& p) {
    if (!p.lora_expand || !p.lora_sync || p.lora.max_rank < 1 || p.lora.slot_stride % 8) return false;
    for (int j = 0; j < p.lora.n_slices; ++j)
        if (!p.lora.slices[j].a || !p.lora.slices[j].ranks || (reinterpret_cast<uintptr_t>(p.lora.slices[j].a) & 15u))
            return false;
    return true;
}

// Warps of the fused shrink for n_tokens tokens (QuantGemvParams::lora_shrink): one xa row each.
__host__ __device__ constexpr int lora_shrink_warps(int n_tokens, int n_slices, int max_rank) {
    return n_tokens * n_slices * max_rank;
}

// The A row that shrink warp wid dots with x, or null where it has nothing to do. Reads only the step's segments and
// the adapter slots, so a kernel may call it before its PDL wait.
__device__ __forceinline__ const uint16_t* lora_shrink_a_row(const QuantGemvParams& p, int wid) {
    const SgmvParams& s = p.lora;
    const int per_tok = s.n_slices * s.max_rank;
    const int t = wid / per_tok, j = wid % per_tok / s.max_rank, r = wid % s.max_rank;
    if (t >= p.n_tokens) return nullptr;
    const int slot = lora_slot(s, t + p.lora_token0);
    if (slot <= 0) return nullptr;
    const uint16_t* a = nullptr;
    const int32_t* ranks = nullptr;
#pragma unroll
    for (int jj = 0; jj < kMaxLoraSlices; ++jj)  // static indices, as lora_ref
        if (jj == j) a = s.slices[jj].a, ranks = s.slices[jj].ranks;
    if (r >= min(ranks[slot], s.max_rank)) return nullptr;
    return a + int64_t(slot - 1) * s.slot_stride + int64_t(r) * p.k;
}

__device__ __forceinline__ float dot8_bf16(const uint4& av, const uint4& xv, float acc) {
    const __nv_bfloat162* ah = reinterpret_cast<const __nv_bfloat162*>(&av);
    const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const float2 af = __bfloat1622float2(ah[e]), xf = __bfloat1622float2(xh[e]);
        acc += af.x * xf.x + af.y * xf.y;
    }
    return acc;
}

// Shrink warp wid from column k of its A row on (a: lora_shrink_a_row), acc holding the columns before: the rest of
// the dot product, four 16-byte loads of A in flight per lane, then lane 0 stores the sum and fences it
// (lora_handover.cuh).
template <int kUnroll = 4>
__device__ __forceinline__ void lora_shrink_finish(const QuantGemvParams& p, int wid, int lane, const uint16_t* a,
                                                   int k, float acc) {
    const SgmvParams& s = p.lora;
    const int per_tok = s.n_slices * s.max_rank;
    const int t = wid / per_tok, j = wid % per_tok / s.max_rank, r = wid % s.max_rank;
    const uint16_t* x = p.x + int64_t(t) * p.x_row_stride;
#pragma unroll kUnroll
    for (; k < p.k; k += 32 * 8)
        acc =
            dot8_bf16(__ldcs(reinterpret_cast<const uint4*>(a + k)), __ldg(reinterpret_cast<const uint4*>(x + k)), acc);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) {
        s.xa[int64_t(t + p.lora_token0) * per_tok + j * s.max_rank + r] = acc;
        __threadfence();  // visible device-wide before the block publishes the unit
    }
}

// One warp of the fused shrink (QuantGemvParams::lora_shrink): xa[token0 + t, j * max_rank + r] = x[t] . A_j[slot][r]
// for warp id wid -> (t, j, r), r fastest; nothing for ranks past the slot's or tokens on the base model, whose xa
// the expand never reads.
// kUnroll 1: one load pair in flight per lane, for a kernel's rare path (a block that takes units while it holds its
// own results), where the unrolled loop would raise the whole kernel's registers.
template <int kUnroll = 4>
__device__ __forceinline__ void lora_shrink_warp(const QuantGemvParams& p, int wid, int lane) {
    if (const uint16_t* a = lora_shrink_a_row(p, wid)) lora_shrink_finish<kUnroll>(p, wid, lane, a, lane * 8, 0.f);
}

// The same warp in two halves around the PDL wait, for the unit a shrink-first block claims before it
// (lora_handover.cuh): lora_shrink_load_a requests the first kShrinkEarlyLoads 16-byte loads of the A row per lane,
// all at once (a whole 4,096-wide row: Qwen3-8B's q|k|v, o, gate|up), and asks L2 for the rest of a wider one (down);
// after the wait lora_shrink_warp_early loads x and finishes. At one token a quantized site's weight stream lasts a
// few microseconds, so the shrink's chain after the wait (claim, slot lookups, A's DRAM round trips behind that
// stream) is on the step's critical path. H200, AWQ Qwen3-8B batch 1 on a rank-16 adapter, ms per step: 3.518
// before, 3.501 with the A rows only asked of L2 (gemv.cu's way), 3.493 with this; the B^T prefetch in quant_mma.cu
// then took it to 3.404 (docs/cuda-benchmarks.md).
constexpr int kShrinkEarlyLoads = 16;

struct ShrinkEarlyA {
    const uint16_t* a = nullptr;  // the row; null: the warp has nothing to do
    uint4 v[kShrinkEarlyLoads];
};

__device__ __forceinline__ void lora_shrink_load_a(const QuantGemvParams& p, int wid, int lane, ShrinkEarlyA& e) {
    e.a = lora_shrink_a_row(p, wid);
    if (!e.a) return;
#pragma unroll
    for (int i = 0; i < kShrinkEarlyLoads; ++i) {
        const int k = lane * 8 + i * 32 * 8;
        e.v[i] = k < p.k ? __ldcs(reinterpret_cast<const uint4*>(e.a + k)) : make_uint4(0, 0, 0, 0);
    }
    constexpr int kEarly = kShrinkEarlyLoads * 32 * 8;
    if (p.k > kEarly) prefetch_row_l2(e.a + kEarly, p.k - kEarly, lane);
}

__device__ __forceinline__ void lora_shrink_warp_early(const QuantGemvParams& p, int wid, int lane,
                                                       const ShrinkEarlyA& e) {
    if (!e.a) return;
    const int t = wid / (p.lora.n_slices * p.lora.max_rank);
    const uint16_t* x = p.x + int64_t(t) * p.x_row_stride;
    uint4 xv[kShrinkEarlyLoads];
#pragma unroll
    for (int i = 0; i < kShrinkEarlyLoads; ++i) {  // every x load in flight before the first use
        const int k = lane * 8 + i * 32 * 8;
        xv[i] = k < p.k ? __ldg(reinterpret_cast<const uint4*>(x + k)) : make_uint4(0, 0, 0, 0);
    }
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kShrinkEarlyLoads; ++i) acc = dot8_bf16(e.v[i], xv[i], acc);
    lora_shrink_finish(p, wid, lane, e.a, lane * 8 + kShrinkEarlyLoads * 32 * 8, acc);
}

}  // namespace loradesk::kernels::detail
