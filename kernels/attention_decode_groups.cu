// Split-K decode attention with thread groups per key, for short per-block key ranges (batch 1-8: many splits
// of ~64 keys each, so that a decode step spreads over the GPU). A lane per key (attention_decode.cu) makes
// every lane do a whole head_dim dot per key — ~1,000 serial FMAs per 32-key sub-tile, which bounds batch 1
// at ~25 µs per layer (docs/profiles/ncu_attention_decode_b1.txt). Here head_dim / 16 lanes share a key (16
// dims = two 16-byte loads each, so one warp load covers several K rows' contiguous bytes), the block's
// warps take different keys of a 64-key chunk, scores go through shared memory, one warp per query row does
// the online softmax, and P·V gives each thread one head_dim column. Writes the same f32 (m, l, acc)
// partials as attention_decode's split mode; the merge kernel combines them. head_dim 64/128, group <= 4.
#include <cuda_bf16.h>

#include <cstdint>

#include "attention_internal.h"
#include "launch_pdl.cuh"
#include "launchers.h"

namespace loradesk::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunk = 64;  // keys per shared-memory round (two per softmax lane)
constexpr int kDimsPerLane = 16;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x, f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
    return v;
}

// HD: head_dim; R: query rows per pass (power of two >= group, <= kWarps: one softmax warp per row).
template <int HD, int R>
__global__ void __launch_bounds__(kThreads) attention_decode_groups_kernel(AttentionParams p,
                                                                           const AttentionWorkItem* items, float* ws) {
    detail::pdl_wait();
    constexpr int kGroup = HD / kDimsPerLane;     // lanes per key
    constexpr int kKeysPerWarp = 32 / kGroup;     // keys a warp scores at once
    constexpr int kKeysPerRound = kWarps * kKeysPerWarp;
    __shared__ float s_s[kChunk][R];  // scores, then probabilities (base-2 units)
    __shared__ int32_t slot_s[kChunk];
    __shared__ float m_s[R], l_s[R], alpha_s[R];

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5, g = lane / kGroup, sub = lane % kGroup;
    const AttentionWorkItem it = items[blockIdx.x];
    const int kvh = blockIdx.y, group = p.n_heads / p.n_kv_heads;
    const int q_begin = p.qo_indptr[it.seq], n_q = p.qo_indptr[it.seq + 1] - q_begin;
    const int pg_begin = p.kv_indptr[it.seq], n_pages = p.kv_indptr[it.seq + 1] - pg_begin;
    const int kv_len = n_pages == 0 ? 0 : (n_pages - 1) * p.page_size + p.kv_last_page_len[it.seq];
    const int kv_end = min(it.kv_end, kv_len);
    const int32_t* pages = p.kv_indices + pg_begin;
    const int64_t slot_stride = int64_t(p.n_kv_heads) * HD;
    const uint16_t* k_head = p.k_pages + int64_t(kvh) * HD;
    const uint16_t* v_head = p.v_pages + int64_t(kvh) * HD;
    const int tile_rows = min(kAttentionTileRows, n_q * group - it.row_begin);
    float* tile = ws + (int64_t(blockIdx.x) * p.n_kv_heads + kvh) * kAttentionTileRows * (HD + 2);

    for (int r0 = 0; r0 < tile_rows; r0 += R) {
        // This lane's 16 dims of every row's q (scaled by scale * log2 e), and each row's causal horizon.
        float q[R][kDimsPerLane];
        int q_pos[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = it.row_begin + r0 + r;
            q_pos[r] = r0 + r < tile_rows ? kv_len - n_q + row / group : -1;
            const int tok = row / group, h = kvh * group + row % group;
            const uint4* src = reinterpret_cast<const uint4*>(p.q + int64_t(q_begin + tok) * p.q_row_stride +
                                                              int64_t(h) * HD + sub * kDimsPerLane);
            const uint4 z = make_uint4(0, 0, 0, 0);
            unpack8(q_pos[r] >= 0 ? src[0] : z, q[r]);
            unpack8(q_pos[r] >= 0 ? src[1] : z, q[r] + 8);
#pragma unroll
            for (int d = 0; d < kDimsPerLane; ++d) q[r][d] *= p.scale * kLog2e;
        }
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = 0.0f;
        __syncthreads();  // the previous pass is done with m_s / l_s
        if (t < R) m_s[t] = -INFINITY, l_s[t] = 0.0f;

        for (int kv0 = it.kv_begin; kv0 < kv_end; kv0 += kChunk) {
            const int n = min(kChunk, kv_end - kv0);
            __syncthreads();  // the previous chunk's P·V is done with s_s / slot_s
            if (t < kChunk)
                slot_s[t] = t < n ? pages[(kv0 + t) / p.page_size] * p.page_size + (kv0 + t) % p.page_size : 0;
            __syncthreads();
            // Q·K: key k of the chunk is scored by lane group g of warp w for k = round * kKeysPerRound + ...
#pragma unroll
            for (int k0 = 0; k0 < kChunk; k0 += kKeysPerRound) {
                const int k = k0 + warp * kKeysPerWarp + g;
                const bool valid = k < n;
                const uint4* kr = reinterpret_cast<const uint4*>(k_head + int64_t(slot_s[k]) * slot_stride +
                                                                 sub * kDimsPerLane);
                const uint4 z = make_uint4(0, 0, 0, 0);
                float kf[kDimsPerLane];
                unpack8(valid ? __ldg(kr) : z, kf);
                unpack8(valid ? __ldg(kr + 1) : z, kf + 8);
                float sc[R];
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    float d = 0.0f;
#pragma unroll
                    for (int i = 0; i < kDimsPerLane; ++i) d = fmaf(q[r][i], kf[i], d);
#pragma unroll
                    for (int o = kGroup / 2; o > 0; o >>= 1) d += __shfl_xor_sync(kFull, d, o);
                    sc[r] = d;
                }
                if (sub == 0)
#pragma unroll
                    for (int r = 0; r < R; ++r) s_s[k][r] = valid && kv0 + k <= q_pos[r] ? sc[r] : -INFINITY;
            }
            __syncthreads();
            // Online softmax, warp r for row r: lanes hold keys lane and lane + 32.
            if (warp < R) {
                const float a = s_s[lane][warp], b = s_s[lane + 32][warp];
                const float m_old = m_s[warp];
                const float m_new = fmaxf(m_old, warp_max(fmaxf(a, b)));
                const float pa = a == -INFINITY ? 0.0f : exp2f(a - m_new);
                const float pb = b == -INFINITY ? 0.0f : exp2f(b - m_new);
                s_s[lane][warp] = pa, s_s[lane + 32][warp] = pb;
                const float sum = warp_sum(pa + pb);
                if (lane == 0) {
                    const float alpha = m_new == -INFINITY ? 1.0f : exp2f(m_old - m_new);  // exp2(-inf) = 0
                    alpha_s[warp] = alpha, l_s[warp] = l_s[warp] * alpha + sum, m_s[warp] = m_new;
                }
            }
            __syncthreads();
            // P·V: thread t owns column t (threads past head_dim only take part in the barriers).
            if (t < HD) {
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r] *= alpha_s[r];
#pragma unroll 16
                for (int k = 0; k < n; ++k) {
                    const float v = __bfloat162float(
                        *reinterpret_cast<const __nv_bfloat16*>(v_head + int64_t(slot_s[k]) * slot_stride + t));
#pragma unroll
                    for (int r = 0; r < R; ++r) acc[r] = fmaf(s_s[k][r], v, acc[r]);
                }
            }
        }
        __syncthreads();  // m_s / l_s final
        if (t < HD)
#pragma unroll
            for (int r = 0; r < R; ++r) {
                float* dst = tile + int64_t(r0 + r) * (HD + 2);
                dst[2 + t] = acc[r];
                if (t == 0) dst[0] = m_s[r] * kLn2, dst[1] = l_s[r];  // -inf stays -inf
            }
    }
}

template <int HD, int R>
cudaError_t launch(const AttentionParams& p, const AttentionWorkItem* items, int n_items, float* ws,
                   cudaStream_t stream) {
    return detail::launch(attention_decode_groups_kernel<HD, R>, dim3(n_items, p.n_kv_heads), kThreads, 0, stream, p,
                          items, ws);
}

template <int HD>
cudaError_t launch_rows(const AttentionParams& p, int group, const AttentionWorkItem* items, int n_items, float* ws,
                        cudaStream_t stream) {
    if (group <= 1) return launch<HD, 1>(p, items, n_items, ws, stream);
    if (group <= 2) return launch<HD, 2>(p, items, n_items, ws, stream);
    return launch<HD, 4>(p, items, n_items, ws, stream);
}

}  // namespace

bool detail::attention_decode_groups_supported(const AttentionParams& p) {
    const int group = p.n_kv_heads > 0 ? p.n_heads / p.n_kv_heads : 0;
    return (p.head_dim == 64 || p.head_dim == 128) && group >= 1 && group <= kWarps &&
           p.q_row_stride % 8 == 0 && reinterpret_cast<uintptr_t>(p.q) % 16 == 0;
}

bool attention_decode_split_groups_supported(const AttentionParams& p) {
    return detail::attention_decode_groups_supported(p);
}

cudaError_t detail::attention_decode_groups(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                                            float* workspace, cudaStream_t stream) {
    const int group = p.n_heads / p.n_kv_heads;
    return p.head_dim == 64 ? launch_rows<64>(p, group, items, n_items, workspace, stream)
                            : launch_rows<128>(p, group, items, n_items, workspace, stream);
}

}  // namespace loradesk::kernels
