// Paged attention for decode and prefill in one kernel family (plan in attention_plan.h): a block takes
// 16 query rows (token x head of one GQA group) against up to kv_chunk keys of one KV head, streaming
// 32-key tiles of K and V through shared memory with an online softmax, and writes (m, l, acc)
// partials; a merge kernel combines the splits of each row tile. f32 CUDA-core math (no tensor cores
// yet): correct first. H100: decode batch 32 x ctx 4096 (32/8 heads, hd 128) 1.0 ms = 18% of the memory
// floor; details in docs/kernel-benchmarks.md.
#include <cuda_bf16.h>

#include "attention_internal.h"
#include "launch_pdl.cuh"
#include "launchers.h"

namespace loradesk::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kKeys = 32;
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = kAttentionTileRows / kWarps;
constexpr int kMaxDPerLane = 8;  // head_dim <= 256
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ float ld(const uint16_t* p) { return __bfloat162float(*reinterpret_cast<const bf16*>(p)); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

struct SeqView {
    int q_begin, n_q, kv_len;
    const int32_t* pages;
};

__device__ SeqView seq_view(const AttentionParams& p, int s) {
    SeqView v;
    v.q_begin = p.qo_indptr[s];
    v.n_q = p.qo_indptr[s + 1] - v.q_begin;
    int n_pages = p.kv_indptr[s + 1] - p.kv_indptr[s];
    v.kv_len = n_pages == 0 ? 0 : (n_pages - 1) * p.page_size + p.kv_last_page_len[s];
    v.pages = p.kv_indices + p.kv_indptr[s];
    return v;
}

// Generic path (any head_dim): element per thread.
__device__ void load_kv_tile_scalar(const AttentionParams& p, const SeqView& sv, int kvh, int kv0, int kv_end,
                                    float* k_s, float* v_s) {
    const int hd = p.head_dim;
    for (int idx = threadIdx.x; idx < kKeys * hd; idx += kThreads) {
        int j = idx / hd, d = idx - j * hd, key = kv0 + j;
        float kx = 0.0f, vx = 0.0f;
        if (key < kv_end) {
            int64_t slot = int64_t(sv.pages[key / p.page_size]) * p.page_size + key % p.page_size;
            int64_t off = (slot * p.n_kv_heads + kvh) * hd + d;
            kx = ld(p.k_pages + off);
            vx = ld(p.v_pages + off);
        }
        k_s[j * (hd + 1) + d] = kx;  // +1 pad: lanes read down a column of K
        v_s[j * hd + d] = vx;
    }
}

constexpr int kThreadsPerKey = kThreads / kKeys;  // 4
constexpr int kVecBatch = 4;                      // 16-byte loads in flight per thread per batch

__device__ __forceinline__ void unpack8(uint4 v, float* dst) {
    const bf16* b = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[e] = __bfloat162float(b[e]);
}

// head_dim % 8 == 0: each thread owns one key and a quarter of its 16-byte chunks, resolves the page once
// and issues its K and V loads together (the scalar path serialises a page-table load per element).
__device__ void load_kv_tile_vec(const AttentionParams& p, const SeqView& sv, int kvh, int kv0, int kv_end, float* k_s,
                                 float* v_s) {
    const int hd = p.head_dim, n_vec = hd / 8;
    const int j = threadIdx.x / kThreadsPerKey, part = threadIdx.x % kThreadsPerKey, key = kv0 + j;
    const uint4* kp = nullptr;
    const uint4* vp = nullptr;
    if (key < kv_end) {
        int64_t slot = int64_t(sv.pages[key / p.page_size]) * p.page_size + key % p.page_size;
        int64_t off = (slot * p.n_kv_heads + kvh) * hd;
        kp = reinterpret_cast<const uint4*>(p.k_pages + off);
        vp = reinterpret_cast<const uint4*>(p.v_pages + off);
    }
    for (int v0 = part; v0 < n_vec; v0 += kThreadsPerKey * kVecBatch) {
        uint4 kr[kVecBatch], vr[kVecBatch];
#pragma unroll
        for (int b = 0; b < kVecBatch; ++b) {
            int v = v0 + b * kThreadsPerKey;
            kr[b] = kp && v < n_vec ? __ldg(kp + v) : make_uint4(0, 0, 0, 0);
            vr[b] = kp && v < n_vec ? __ldg(vp + v) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int b = 0; b < kVecBatch; ++b) {
            int v = v0 + b * kThreadsPerKey;
            if (v >= n_vec) break;
            unpack8(kr[b], k_s + j * (hd + 1) + v * 8);
            unpack8(vr[b], v_s + j * hd + v * 8);
        }
    }
}

__global__ void __launch_bounds__(kThreads)
    attention_kernel(AttentionParams p, const AttentionWorkItem* items, float* ws) {
    detail::pdl_wait();
    extern __shared__ float smem[];
    const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads;
    float* q_s = smem;                           // [16][hd], pre-scaled
    float* k_s = q_s + kAttentionTileRows * hd;  // [32][hd + 1]
    float* v_s = k_s + kKeys * (hd + 1);         // [32][hd]
    const AttentionWorkItem it = items[blockIdx.x];
    const int kvh = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const SeqView sv = seq_view(p, it.seq);
    const int n_rows = sv.n_q * group;
    const bool vec = hd % 8 == 0;
    const bool warp_active = it.row_begin + warp * kRowsPerWarp <
                             n_rows;  // pools are cudaMalloc'd, so rows of such head_dim are 16-byte aligned

    for (int idx = threadIdx.x; idx < kAttentionTileRows * hd; idx += kThreads) {
        int r = idx / hd, d = idx - r * hd, row = it.row_begin + r;
        float v = 0.0f;
        if (row < n_rows) {
            int tok = row / group, h = kvh * group + row % group;
            v = ld(p.q + (sv.q_begin + tok) * p.q_row_stride + int64_t(h) * hd + d) * p.scale;
        }
        q_s[idx] = v;
    }
    float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kMaxDPerLane];
    int q_pos[kRowsPerWarp];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        int row = it.row_begin + warp * kRowsPerWarp + rr;
        q_pos[rr] = row < n_rows ? sv.kv_len - sv.n_q + row / group : -1;  // -1: no key is visible
        m[rr] = -INFINITY;
        l[rr] = 0.0f;
#pragma unroll
        for (int i = 0; i < kMaxDPerLane; ++i) acc[rr][i] = 0.0f;
    }

    for (int kv0 = it.kv_begin; kv0 < it.kv_end; kv0 += kKeys) {
        __syncthreads();
        if (vec)
            load_kv_tile_vec(p, sv, kvh, kv0, it.kv_end, k_s, v_s);
        else
            load_kv_tile_scalar(p, sv, kvh, kv0, it.kv_end, k_s, v_s);
        __syncthreads();
        if (!warp_active) continue;  // decode tiles often fill only the first warp's rows
        float sc[kRowsPerWarp] = {};
        const float* krow = k_s + lane * (hd + 1);
        const float* qrow = q_s + warp * kRowsPerWarp * hd;
        for (int d = 0; d < hd; ++d) {
            float kd = krow[d];
#pragma unroll
            for (int rr = 0; rr < kRowsPerWarp; ++rr) sc[rr] += qrow[rr * hd + d] * kd;
        }
        const int key = kv0 + lane;
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            bool ok = key < it.kv_end && key <= q_pos[rr];
            float s = ok ? sc[rr] : -INFINITY;
            float m_new = fmaxf(m[rr], warp_max(s));
            if (m_new == -INFINITY) continue;  // warp-uniform: nothing visible yet
            float alpha = expf(m[rr] - m_new);
            float pr = ok ? expf(s - m_new) : 0.0f;
            l[rr] = l[rr] * alpha + warp_sum(pr);
            m[rr] = m_new;
#pragma unroll
            for (int i = 0; i < kMaxDPerLane; ++i) acc[rr][i] *= alpha;
            for (int j = 0; j < kKeys; ++j) {
                float pj = __shfl_sync(0xffffffffu, pr, j);
                const float* vrow = v_s + j * hd;
#pragma unroll
                for (int i = 0; i < kMaxDPerLane; ++i) {
                    int d = lane + 32 * i;
                    if (d < hd) acc[rr][i] += pj * vrow[d];
                }
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        int row = warp * kRowsPerWarp + rr;
        float* dst = ws + ((int64_t(blockIdx.x) * p.n_kv_heads + kvh) * kAttentionTileRows + row) * (hd + 2);
        if (lane == 0) dst[0] = m[rr], dst[1] = l[rr];
#pragma unroll
        for (int i = 0; i < kMaxDPerLane; ++i) {
            int d = lane + 32 * i;
            if (d < hd) dst[2 + d] = acc[rr][i];
        }
    }
}

// Combines the split-K partials of each row tile: out = sum_i e^(m_i - M) acc_i / sum_i e^(m_i - M) l_i.
// One warp per row; lanes take items in parallel for M and the denominator, then the per-item weights go
// through shared memory 32 at a time while each lane sums its head_dim columns with independent loads.
__global__ void __launch_bounds__(kThreads)
    attention_merge_kernel(AttentionParams p, const AttentionMergeGroup* groups, const float* ws) {
    detail::pdl_wait();
    __shared__ float w_s[kWarps][32];
    const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads;
    const AttentionMergeGroup g = groups[blockIdx.x];
    const int kvh = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const SeqView sv = seq_view(p, g.seq);
    const int n_rows = sv.n_q * group;
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        int local = warp * kRowsPerWarp + rr, row = g.row_begin + local;
        if (row >= n_rows) break;
        auto part = [&](int item) {
            return ws + ((int64_t(item) * p.n_kv_heads + kvh) * kAttentionTileRows + local) * (hd + 2);
        };
        float mx = -INFINITY;
        for (int i = g.item_begin + lane; i < g.item_end; i += 32) mx = fmaxf(mx, part(i)[0]);
        mx = warp_max(mx);
        float denom = 0.0f;
        if (mx != -INFINITY)
            for (int i = g.item_begin + lane; i < g.item_end; i += 32) denom += part(i)[1] * expf(part(i)[0] - mx);
        denom = warp_sum(denom);
        float sum[kMaxDPerLane] = {};
        for (int base = g.item_begin; base < g.item_end; base += 32) {
            const int n = min(32, g.item_end - base);
            __syncwarp();
            w_s[warp][lane] = lane < n && mx != -INFINITY ? expf(part(base + lane)[0] - mx) : 0.0f;
            __syncwarp();
            for (int j = 0; j < n; ++j) {
                const float w = w_s[warp][j];
                const float* acc = part(base + j) + 2;
#pragma unroll
                for (int k = 0; k < kMaxDPerLane; ++k) {
                    int d = lane + 32 * k;
                    if (d < hd) sum[k] += w * acc[d];
                }
            }
        }
        int tok = row / group, h = kvh * group + row % group;
        bf16* out = reinterpret_cast<bf16*>(p.out) + int64_t(sv.q_begin + tok) * p.n_heads * hd + int64_t(h) * hd;
#pragma unroll
        for (int k = 0; k < kMaxDPerLane; ++k) {
            int d = lane + 32 * k;
            if (d < hd) out[d] = __float2bfloat16_rn(denom > 0.0f ? sum[k] / denom : 0.0f);
        }
    }
}

}  // namespace

cudaError_t attention(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                      const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream) {
    if (p.head_dim <= 0 || p.head_dim > 32 * kMaxDPerLane || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0)
        return cudaErrorInvalidValue;
    if (n_items == 0) return cudaSuccess;
    size_t smem = sizeof(float) *
                  (size_t(kAttentionTileRows) * p.head_dim + kKeys * (p.head_dim + 1) + size_t(kKeys) * p.head_dim);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
        if (e != cudaSuccess) return e;
    }
    cudaError_t e =
        detail::launch(attention_kernel, dim3(n_items, p.n_kv_heads), kThreads, smem, stream, p, items, workspace);
    if (e != cudaSuccess) return e;
    return detail::attention_merge(p, groups, n_groups, workspace, stream);
}

namespace detail {

cudaError_t attention_merge(const AttentionParams& p, const AttentionMergeGroup* groups, int n_groups,
                            const float* workspace, cudaStream_t stream) {
    if (n_groups == 0) return cudaSuccess;
    return detail::launch(attention_merge_kernel, dim3(n_groups, p.n_kv_heads), kThreads, 0, stream, p, groups,
                          workspace);
}

}  // namespace detail

}  // namespace loradesk::kernels
