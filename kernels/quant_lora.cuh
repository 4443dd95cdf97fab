// The LoRA expand that the quantized kernels (quant_gemv.cu, quant_mma.cu) add in their epilogue: for token t and
// site column sc, which slot and slice apply (QuantGemvParams::lora, quant_params.h) and the share of the rank sum
// a block adds. Private to kernels/.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "quant_params.h"

namespace loradesk::kernels::detail {

__device__ __forceinline__ float bf(const uint16_t* p) {
    return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
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
};

__device__ __forceinline__ bool lora_ref(const QuantGemvParams& p, int t, int sc, LoraRef& ref) {
    const SgmvParams& s = p.lora;
    t += p.lora_token0;
    int slot = 0;
    for (int g = 0; g < s.n_segs; ++g)
        if (t >= s.seg_indptr[g] && t < s.seg_indptr[g + 1]) slot = s.seg_slot[g];
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

}  // namespace loradesk::kernels::detail
