// Element-wise and row-wise kernels of the forward pass: embedding gather into the f32 residual stream,
// fused residual add + RMSNorm (optionally on a gathered subset of rows, for the logits), q/k norm +
// rotary embedding + paged K/V write, SiLU*mul, bias add, the column gather of act-order GPTQ and argmax. All f32
// arithmetic on bf16 data. Memory-bound and small next to the GEMMs; see docs/kernel-benchmarks.md for measured
// figures.
#include <cuda_bf16.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "launch_pdl.cuh"
#include "launchers.h"
#include "rope_head.cuh"
#include "swiglu.cuh"

namespace loradesk::kernels {
namespace {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld(const uint16_t* p) { return __bfloat162float(*reinterpret_cast<const bf16*>(p)); }
__device__ __forceinline__ void st(uint16_t* p, float v) { *reinterpret_cast<bf16*>(p) = __float2bfloat16_rn(v); }
// A bf16 value with a pending LoRA delta (SgmvParams::delta): the value the expand would have stored. The kernels
// that take a delta are instantiated with and without it (kDelta): with a run-time null check per value instead,
// add_rmsnorm took 0.8 us more per launch in steps without any delta (CUPTI, H200, Qwen3-8B batch 32).
__device__ __forceinline__ float ld_plus(const uint16_t* p, const float* delta) {
    return delta ? __bfloat162float(__float2bfloat16_rn(ld(p) + *delta)) : ld(p);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over a block of up to 1024 threads; every thread gets the result.
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // partial may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    int n_warps = (blockDim.x + 31) >> 5;
    float total = lane < n_warps ? partial[lane] : 0.0f;
    return warp_sum(total);
}

__global__ void embedding_gather_kernel(const uint16_t* table, const int32_t* ids, int hidden, int vocab, float* out) {
    detail::pdl_wait();
    int t = blockIdx.x, id = ids[t];
    bool ok = id >= 0 && id < vocab;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x)
        out[int64_t(t) * hidden + c] = ok ? ld(table + int64_t(id) * hidden + c) : 0.0f;
}

// Eight values of a bf16 row from 16 bytes at p, each with its pending LoRA delta (ld_plus) where kDelta.
template <bool kDelta>
__device__ __forceinline__ void ld8_plus(const uint16_t* p, const float* delta, float (&v)[8]) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(b[i]);
        v[2 * i] = f.x, v[2 * i + 1] = f.y;
    }
    if constexpr (kDelta) {
        const float4 d0 = reinterpret_cast<const float4*>(delta)[0], d1 = reinterpret_cast<const float4*>(delta)[1];
        const float d[8] = {d0.x, d0.y, d0.z, d0.w, d1.x, d1.y, d1.z, d1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = __bfloat162float(__float2bfloat16_rn(v[i] + d[i]));
    }
}

constexpr int kNormMaxPerThread = 8;  // add_rmsnorm keeps rows of up to 8 x its threads in registers

// K: values per thread held in registers (1, 2, 4 or 8; the launcher picks the smallest that covers the row), or
// 0 for rows longer than 8 x the threads (a loop over the row, reading it twice).
template <int K, bool kDelta>
__global__ void add_rmsnorm_kernel(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight,
                                   const int32_t* rows, int hidden, float eps, uint16_t* out) {
    // The norm weights (constant; evicted from L2 by each step's weight stream) and the row index (step
    // metadata) never depend on the predecessor: asked for before the wait.
    for (int c = threadIdx.x * 64; c < hidden; c += blockDim.x * 64) detail::prefetch_l2(weight + c);
    int64_t r = rows ? rows[blockIdx.x] : blockIdx.x;
    detail::pdl_wait();
    float* h = residual + r * hidden;
    uint16_t* o = out + int64_t(blockIdx.x) * hidden;
    if constexpr (K > 0) {
        // The row's values stay in registers: every load is issued before the first store, so the row costs one
        // memory round trip per pass instead of one per element a thread owns (the stores to the residual could
        // alias the next loads, which kept the compiler from hoisting them).
        float v[K], w[K];
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            v[k] = c < hidden ? h[c] : 0.0f;
            if (x && c < hidden) v[k] += ld_plus(x + r * hidden + c, kDelta ? x_delta + r * hidden + c : nullptr);
            w[k] = c < hidden ? ld(weight + c) : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (x && c < hidden) h[c] = v[k];
            ss += v[k] * v[k];
        }
        const float inv = rsqrtf(block_sum(ss) / hidden + eps);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < hidden) st(o + c, v[k] * inv * w[k]);
        }
    } else {
        float ss = 0.0f;
        for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
            float v = h[c];
            if (x) {
                v += ld_plus(x + r * hidden + c, kDelta ? x_delta + r * hidden + c : nullptr);
                h[c] = v;
            }
            ss += v * v;
        }
        float inv = rsqrtf(block_sum(ss) / hidden + eps);
        for (int c = threadIdx.x; c < hidden; c += blockDim.x) st(o + c, h[c] * inv * ld(weight + c));
    }
}

// add_rmsnorm_kernel with 8 columns per 16-byte chunk and C chunks per thread, where the hidden size is a multiple of
// 8 and the buffers are 16-byte aligned (add_rmsnorm picks it). The one-value kernel ran a row over 1,024 threads with
// 2- and 4-byte loads: about 4 us per launch at Llama-7B's 128 tokens x 4,096 (6 MB), 65 launches per step (CUPTI,
// H200, twenty-third session). Same arithmetic and rounding per value; only the order of the sum of squares differs.
template <int C, bool kDelta>
__global__ void add_rmsnorm8_kernel(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight,
                                    const int32_t* rows, int hidden, float eps, uint16_t* out) {
    for (int c = threadIdx.x * 64; c < hidden; c += blockDim.x * 64) detail::prefetch_l2(weight + c);
    const int64_t r = rows ? rows[blockIdx.x] : blockIdx.x;
    detail::pdl_wait();
    float* h = residual + r * hidden;
    uint16_t* o = out + int64_t(blockIdx.x) * hidden;
    float v[C][8];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= hidden) continue;
        const float4 h0 = reinterpret_cast<const float4*>(h + c)[0], h1 = reinterpret_cast<const float4*>(h + c)[1];
        const float hv[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        float xv[8] = {};
        if (x) ld8_plus<kDelta>(x + r * hidden + c, kDelta ? x_delta + r * hidden + c : nullptr, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[k][i] = x ? hv[i] + xv[i] : hv[i];
    }
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= hidden) continue;
        if (x) {
            reinterpret_cast<float4*>(h + c)[0] = make_float4(v[k][0], v[k][1], v[k][2], v[k][3]);
            reinterpret_cast<float4*>(h + c)[1] = make_float4(v[k][4], v[k][5], v[k][6], v[k][7]);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) ss += v[k][i] * v[k][i];
    }
    const float inv = rsqrtf(block_sum(ss) / hidden + eps);
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = 8 * (threadIdx.x + k * blockDim.x);
        if (c >= hidden) continue;
        float w[8];
        ld8_plus<false>(weight + c, nullptr, w);
        uint4 packed;
        __nv_bfloat162* ob = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
        for (int i = 0; i < 4; ++i)
            ob[i] = __floats2bfloat162_rn(v[k][2 * i] * inv * w[2 * i], v[k][2 * i + 1] * inv * w[2 * i + 1]);
        *reinterpret_cast<uint4*>(o + c) = packed;
    }
}

constexpr int kRopeWarps = 4;

// One warp per (token, head); the per-head math is rope_head.cuh's.
template <bool kDelta>
__global__ void rope_kv_kernel(RopeKvParams p) {
    int lane = threadIdx.x & 31;
    int head = blockIdx.y * kRopeWarps + (threadIdx.x >> 5);
    int t = blockIdx.x, total_heads = p.n_heads + 2 * p.n_kv_heads;
    if (head >= total_heads) return;  // touches no memory; its exit releases the next kernel
    int half = p.head_dim / 2;
    uint16_t* src = p.qkv + t * p.qkv_row_stride + int64_t(head) * p.head_dim;
    bool is_q = head < p.n_heads, is_v = head >= p.n_heads + p.n_kv_heads;
    // Before the wait, what never depends on the predecessor: the position and KV slot (step metadata), the
    // rotation angles, the norm weights' lines. Only the q/k/v values come from it (the QKV projection).
    const int32_t slot = is_q ? 0 : p.kv_slots[t];
    detail::RopeAngles angles;
    const uint16_t* norm = is_v ? nullptr : is_q ? p.q_norm : p.k_norm;
    if (!is_v) {
        detail::rope_angles(p.positions[t], p.inv_freq, half, lane, angles);
        if (norm && lane * 64 < p.head_dim) detail::prefetch_l2(norm + lane * 64);
    }
    detail::pdl_wait();
    float lo[detail::kRopeMaxPairsPerLane], hi[detail::kRopeMaxPairsPerLane];
    const float* delta = kDelta ? p.qkv_delta + t * p.qkv_row_stride + int64_t(head) * p.head_dim : nullptr;
    detail::rope_head(src, delta, half, norm, p.norm_eps, !is_v, angles, lane, lo, hi);
    uint16_t* dst = src;
    if (!is_q) {
        int kvh = is_v ? head - p.n_heads - p.n_kv_heads : head - p.n_heads;
        dst = (is_v ? p.v_pages : p.k_pages) + (int64_t(slot) * p.n_kv_heads + kvh) * p.head_dim;
    }
#pragma unroll
    for (int k = 0; k < detail::kRopeMaxPairsPerLane; ++k) {
        int i = lane + 32 * k;
        if (i < half) st(dst + i, lo[k]), st(dst + i + half, hi[k]);
    }
}

template <bool kDelta>
__global__ void silu_mul_kernel(const uint16_t* gate_up, const float* delta, int64_t n, int inter, uint16_t* out) {
    detail::pdl_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        int64_t t = i / inter, c = i % inter, gi = t * 2 * inter + c, ui = gi + inter;
        float g = ld_plus(gate_up + gi, kDelta ? delta + gi : nullptr);
        float u = ld_plus(gate_up + ui, kDelta ? delta + ui : nullptr);
        st(out + i, detail::swiglu(g, u));
    }
}

// silu_mul_kernel with 8 columns per thread (16-byte loads and store) and a token per row of the grid, where the
// intermediate size is a multiple of 8 and the buffers are 16-byte aligned (silu_mul picks it). The one-element loop
// (a 64-bit division and two 2-byte loads per value) took 8.2 us for Llama-7B's 128 tokens x 11,008 columns, 8.4 MB
// at ~1 TB/s: 0.26 ms of a 14.4 ms decode step (CUPTI, H200, twenty-third session). Same arithmetic, same rounding.
template <bool kDelta>
__global__ void silu_mul8_kernel(const uint16_t* gate_up, const float* delta, int n_tokens, int inter, uint16_t* out) {
    detail::pdl_wait();
    const int n8 = inter / 8;
    for (int t = blockIdx.y; t < n_tokens; t += gridDim.y)
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n8; j += gridDim.x * blockDim.x) {
            const int64_t gi = int64_t(t) * 2 * inter + 8 * j, ui = gi + inter;
            float g[8], u[8];
            ld8_plus<kDelta>(gate_up + gi, kDelta ? delta + gi : nullptr, g);
            ld8_plus<kDelta>(gate_up + ui, kDelta ? delta + ui : nullptr, u);
            uint4 o;
            __nv_bfloat162* ob = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ob[i] = __floats2bfloat162_rn(detail::swiglu(g[2 * i], u[2 * i]),
                                              detail::swiglu(g[2 * i + 1], u[2 * i + 1]));
            *reinterpret_cast<uint4*>(out + int64_t(t) * inter + 8 * j) = o;
        }
}

__global__ void bias_add_kernel(uint16_t* y, int64_t stride, const uint16_t* bias, int64_t n, int cols) {
    detail::pdl_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        int64_t t = i / cols, c = i % cols;
        uint16_t* p = y + t * stride + c;
        st(p, ld(p) + ld(bias + c));
    }
}

// The order is fixed at load, so it is read before the PDL wait; x after it.
__global__ void gather_columns_kernel(const uint16_t* x, int64_t stride, const int32_t* order, int n_tokens, int cols,
                                      uint16_t* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int from = i < cols ? __ldg(order + i) : 0;
    detail::pdl_wait();
    if (i >= cols) return;
    for (int t = blockIdx.y; t < n_tokens; t += gridDim.y) out[int64_t(t) * cols + i] = x[t * stride + from];
}

// Argmax of a row is split over blocks of kArgmaxChunk logits (a 151,936-token row was one block, 125 us under
// ncu: the tail of every decode step). Each block folds its best (value, index) into the row's 64-bit slot by
// atomicMax on an order-preserving key (larger value first, then the lower index), then counts itself in; the
// row's last block writes the index and zeroes both words for the next launch. The key order is the twin's:
// the largest value, the lowest index among equal ones (-0 counts as +0); NaN and -inf never win; a row
// where nothing can win gets 0.
constexpr int kArgmaxChunk = 4096;
constexpr int kArgmaxThreads = 256;

__device__ __forceinline__ unsigned long long argmax_key(float v, int idx) {
    uint32_t b = __float_as_uint(v == 0.0f ? 0.0f : v);
    b = (b & 0x80000000u) ? ~b : b | 0x80000000u;
    return (static_cast<unsigned long long>(b) << 32) | ~static_cast<uint32_t>(idx);
}

// masks == nullptr: plain argmax; else row r keeps to the tokens of mask mask_of_row[r] (none when < 0).
__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* logits, int vocab, int32_t* out, const uint32_t* masks, const int32_t* mask_of_row,
                  int mask_words, unsigned long long* ws) {
    const int row = blockIdx.y;
    const int which = masks ? mask_of_row[row] : -1;  // step metadata: read before the wait
    detail::pdl_wait();
    const float* r = logits + int64_t(row) * vocab;
    const int begin = blockIdx.x * kArgmaxChunk;
    float best = -FLT_MAX;
    int idx = INT32_MAX;
    if (which < 0) {
        const int end = min(vocab, begin + kArgmaxChunk);
        for (int c = begin + threadIdx.x; c < end; c += kArgmaxThreads) {
            const float v = r[c];
            if (v > best) best = v, idx = c;  // NaN compares false and never wins
        }
    } else {
        const uint32_t* m = masks + int64_t(which) * mask_words;
        const int end = min(min(vocab, mask_words * 32), begin + kArgmaxChunk);
        for (int c = begin + threadIdx.x; c < end; c += kArgmaxThreads) {
            const float v = r[c];
            if ((m[c >> 5] >> (c & 31) & 1u) && v > best) best = v, idx = c;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ov > best || (ov == best && oi < idx)) best = ov, idx = oi;
    }
    __shared__ float sv[32];
    __shared__ int si[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sv[warp] = best, si[warp] = idx;
    __syncthreads();
    if (warp != 0) return;
    constexpr int n_warps = kArgmaxThreads / 32;
    best = lane < n_warps ? sv[lane] : -FLT_MAX;
    idx = lane < n_warps ? si[lane] : INT32_MAX;
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ov > best || (ov == best && oi < idx)) best = ov, idx = oi;
    }
    if (lane != 0) return;
    unsigned long long* slot = ws + 2 * int64_t(row);
    if (idx != INT32_MAX) atomicMax(slot, argmax_key(best, idx));
    __threadfence();  // this block's candidate is in before it counts itself
    if (atomicAdd(slot + 1, 1ull) == gridDim.x - 1) {
        const unsigned long long k = atomicExch(slot, 0ull);
        atomicExch(slot + 1, 0ull);
        out[row] = k == 0 ? 0 : int32_t(~static_cast<uint32_t>(k));
    }
}

// The 8-column kernels' condition on every buffer they touch.
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int grid_for(int64_t n, int threads) { return int(std::min<int64_t>((n + threads - 1) / threads, 65535)); }

}  // namespace

cudaError_t embedding_gather(const uint16_t* table, const int32_t* ids, int n_tokens, int hidden, int vocab, float* out,
                             cudaStream_t stream) {
    if (n_tokens == 0) return cudaSuccess;
    return detail::launch(embedding_gather_kernel, n_tokens, 256, 0, stream, table, ids, hidden, vocab, out);
}

cudaError_t add_rmsnorm(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight,
                        const int32_t* rows, int n_rows, int hidden, float eps, uint16_t* out, cudaStream_t stream) {
    if (n_rows == 0) return cudaSuccess;
    // 16-byte chunks: one per thread up to 512 threads, else two (rows of up to 8,192 values). The 65 launches of a
    // Llama-7B batch-128 step took 217 us in 512 x 1 (CUPTI, H200, twenty-fourth session, call 2), 244 us in 256 x 2
    // and 256 us in the one-value kernel (call 1, another H200).
    const int chunks = hidden / 8, per_chunk = chunks <= 512 ? 1 : 2;
    const bool vec = hidden % 8 == 0 && chunks <= 1024 && aligned16(residual) && aligned16(weight) && aligned16(out) &&
                     (!x || aligned16(x)) && (!x_delta || aligned16(x_delta));
    if (vec) {
        const int threads = ((chunks + per_chunk - 1) / per_chunk + 31) / 32 * 32;
        auto go8 = [&](auto kernel) {
            return detail::launch(kernel, n_rows, threads, 0, stream, x, x_delta, residual, weight, rows, hidden, eps,
                                  out);
        };
        auto pick8 = [&](auto with_delta) {
            constexpr bool D = decltype(with_delta)::value;
            return per_chunk == 1 ? go8(add_rmsnorm8_kernel<1, D>) : go8(add_rmsnorm8_kernel<2, D>);
        };
        return x_delta ? pick8(std::true_type{}) : pick8(std::false_type{});
    }
    const int threads = hidden >= 4096 ? 1024 : hidden >= 1024 ? 512 : 128;
    const int per = (hidden + threads - 1) / threads;
    auto go = [&](auto kernel) {
        return detail::launch(kernel, n_rows, threads, 0, stream, x, x_delta, residual, weight, rows, hidden, eps, out);
    };
    auto pick = [&](auto with_delta) {
        constexpr bool D = decltype(with_delta)::value;
        if (per <= 1) return go(add_rmsnorm_kernel<1, D>);
        if (per <= 2) return go(add_rmsnorm_kernel<2, D>);
        if (per <= 4) return go(add_rmsnorm_kernel<4, D>);
        if (per <= kNormMaxPerThread) return go(add_rmsnorm_kernel<kNormMaxPerThread, D>);
        return go(add_rmsnorm_kernel<0, D>);
    };
    return x_delta ? pick(std::true_type{}) : pick(std::false_type{});
}

cudaError_t rope_kv_write(const RopeKvParams& p, cudaStream_t stream) {
    if (p.head_dim % 2 != 0 || p.head_dim > 2 * 32 * detail::kRopeMaxPairsPerLane) return cudaErrorInvalidValue;
    if (p.n_tokens == 0) return cudaSuccess;
    int total_heads = p.n_heads + 2 * p.n_kv_heads;
    dim3 grid(p.n_tokens, (total_heads + kRopeWarps - 1) / kRopeWarps);
    return p.qkv_delta ? detail::launch(rope_kv_kernel<true>, grid, 32 * kRopeWarps, 0, stream, p)
                       : detail::launch(rope_kv_kernel<false>, grid, 32 * kRopeWarps, 0, stream, p);
}

cudaError_t silu_mul(const uint16_t* gate_up, const float* delta, int n_tokens, int inter, uint16_t* out,
                     cudaStream_t stream) {
    int64_t n = int64_t(n_tokens) * inter;
    if (n == 0) return cudaSuccess;
    if (inter % 8 == 0 && aligned16(gate_up) && aligned16(out) && (!delta || aligned16(delta))) {
        constexpr int kThreads = 128;
        const dim3 grid(unsigned((inter / 8 + kThreads - 1) / kThreads), unsigned(std::min(n_tokens, 65535)));
        return delta ? detail::launch(silu_mul8_kernel<true>, grid, kThreads, 0, stream, gate_up, delta, n_tokens,
                                      inter, out)
                     : detail::launch(silu_mul8_kernel<false>, grid, kThreads, 0, stream, gate_up, delta, n_tokens,
                                      inter, out);
    }
    return delta
               ? detail::launch(silu_mul_kernel<true>, grid_for(n, 256), 256, 0, stream, gate_up, delta, n, inter, out)
               : detail::launch(silu_mul_kernel<false>, grid_for(n, 256), 256, 0, stream, gate_up, delta, n, inter,
                                out);
}

cudaError_t bias_add(uint16_t* y, int64_t y_row_stride, const uint16_t* bias, int n_tokens, int cols,
                     cudaStream_t stream) {
    int64_t n = int64_t(n_tokens) * cols;
    if (n == 0) return cudaSuccess;
    return detail::launch(bias_add_kernel, grid_for(n, 256), 256, 0, stream, y, y_row_stride, bias, n, cols);
}

cudaError_t gather_columns(const uint16_t* x, int64_t x_row_stride, const int32_t* order, int n_tokens, int cols,
                           uint16_t* out, cudaStream_t stream) {
    if (n_tokens == 0 || cols == 0) return cudaSuccess;
    if (n_tokens < 0 || cols < 0 || x_row_stride < cols || !x || !order || !out) return cudaErrorInvalidValue;
    const dim3 grid(unsigned((cols + 255) / 256), unsigned(std::min(n_tokens, 64)));
    return detail::launch(gather_columns_kernel, grid, 256, 0, stream, x, x_row_stride, order, n_tokens, cols, out);
}

cudaError_t argmax(const float* logits, int n_rows, int vocab, int32_t* out, void* workspace, cudaStream_t stream) {
    return masked_argmax(logits, n_rows, vocab, nullptr, nullptr, 0, out, workspace, stream);
}

cudaError_t masked_argmax(const float* logits, int n_rows, int vocab, const uint32_t* masks, const int32_t* mask_of_row,
                          int mask_words, int32_t* out, void* workspace, cudaStream_t stream) {
    if (n_rows == 0) return cudaSuccess;
    if (vocab <= 0 || !workspace) return cudaErrorInvalidValue;
    const dim3 grid((vocab + kArgmaxChunk - 1) / kArgmaxChunk, n_rows);
    return detail::launch(argmax_kernel, grid, kArgmaxThreads, 0, stream, logits, vocab, out, masks, mask_of_row,
                          mask_words, static_cast<unsigned long long*>(workspace));
}

}  // namespace loradesk::kernels
