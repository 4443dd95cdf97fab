// Private to kernels/: the per-head q/k RMSNorm + rotary embedding of one token, as one warp computes it. Shared
// by rope_kv_write (elementwise.cu) and the decode attention that fuses it (attention_decode.cu), so that both
// write bit-identical K rows and see bit-identical q.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace loradesk::kernels::detail {

constexpr int kRopeMaxPairsPerLane = 4;  // head_dim <= 256

// A lane owns the rotation partners (i, i + half) for i = lane + 32 k.
struct RopeAngles {
    float sn[kRopeMaxPairsPerLane], cs[kRopeMaxPairsPerLane];
};

// From the position (step metadata) and inv_freq (constant) only: callers compute it before their PDL wait.
__device__ __forceinline__ void rope_angles(int pos, const float* inv_freq, int half, int lane, RopeAngles& a) {
#pragma unroll
    for (int k = 0; k < kRopeMaxPairsPerLane; ++k) {
        const int i = lane + 32 * k;
        a.sn[k] = 0.0f, a.cs[k] = 1.0f;
        if (i < half) sincosf(float(pos) * inv_freq[i], &a.sn[k], &a.cs[k]);
    }
}

__device__ __forceinline__ float rope_ld(const uint16_t* p) {
    return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

__device__ __forceinline__ float rope_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// src[i], plus a pending LoRA delta (RopeKvParams::qkv_delta) rounded in as the expand would have stored it.
__device__ __forceinline__ float rope_ld(const uint16_t* src, const float* delta, int i) {
    return delta ? __bfloat162float(__float2bfloat16_rn(rope_ld(src + i) + delta[i])) : rope_ld(src + i);
}

// One warp, one head of head_dim = 2 half values at src (+ delta, when set): lo[k] = src[i], hi[k] = src[i + half];
// with rotate (q and k, not v) the optional RMSNorm over the head (norm: its weights, or null) and then the
// rotation. The values stay f32: the caller rounds each once where it stores it.
__device__ __forceinline__ void rope_head(const uint16_t* src, const float* delta, int half, const uint16_t* norm,
                                          float eps, bool rotate, const RopeAngles& a, int lane,
                                          float (&lo)[kRopeMaxPairsPerLane], float (&hi)[kRopeMaxPairsPerLane]) {
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kRopeMaxPairsPerLane; ++k) {
        const int i = lane + 32 * k;
        lo[k] = i < half ? rope_ld(src, delta, i) : 0.0f;
        hi[k] = i < half ? rope_ld(src, delta, i + half) : 0.0f;
        ss += lo[k] * lo[k] + hi[k] * hi[k];
    }
    if (!rotate) return;
    const float inv = norm ? rsqrtf(rope_warp_sum(ss) / (2 * half) + eps) : 1.0f;
#pragma unroll
    for (int k = 0; k < kRopeMaxPairsPerLane; ++k) {
        const int i = lane + 32 * k;
        if (i >= half) continue;
        float x1 = lo[k], x2 = hi[k];
        if (norm) x1 *= inv * rope_ld(norm + i), x2 *= inv * rope_ld(norm + i + half);
        lo[k] = x1 * a.cs[k] - x2 * a.sn[k];
        hi[k] = x2 * a.cs[k] + x1 * a.sn[k];
    }
}

}  // namespace loradesk::kernels::detail
