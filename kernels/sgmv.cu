// SGMV LoRA kernels over adapter segments (Punica-style shrink/expand): tokens are grouped by slot, each
// block works on a few tokens of one segment so A rows / B^T columns are read once per block, and each
// slot's real rank bounds the work (padding rows up to max_rank are never touched). Up to three slices
// (fused q/k/v or gate/up) share one launch. H100: fused qkv, 32 tokens x 8 adapters, rank 16: 34 us
// (launch gaps included); docs/kernel-benchmarks.md.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "launchers.h"

namespace loradesk::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kTok = 4;  // tokens per block: A / B^T reuse across the segment's tokens
constexpr int kShrinkWarps = 8;
constexpr int kExpandThreads = 256;

__device__ __forceinline__ float ld(const uint16_t* p) { return __bfloat162float(*reinterpret_cast<const bf16*>(p)); }

__device__ __forceinline__ void fma8(float& acc, uint4 a, uint4 x) {
    const bf16* av = reinterpret_cast<const bf16*>(&a);
    const bf16* xv = reinterpret_cast<const bf16*>(&x);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc += __bfloat162float(av[i]) * __bfloat162float(xv[i]);
}

__global__ void __launch_bounds__(32 * kShrinkWarps) sgmv_shrink_kernel(SgmvParams p, bool vec8) {
    const int seg = blockIdx.x, slot = p.seg_slot[seg];
    if (slot <= 0) return;
    const LoraSlice& sl = p.slices[blockIdx.z];
    const int rank = sl.ranks[slot];
    const int t0 = p.seg_indptr[seg] + blockIdx.y * kTok;
    const int n_tok = min(kTok, p.seg_indptr[seg + 1] - t0);
    if (n_tok <= 0 || rank <= 0) return;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, in = p.in_features;
    const uint16_t* a = sl.a + int64_t(slot - 1) * p.slot_stride;
    for (int r = warp; r < rank; r += kShrinkWarps) {
        const uint16_t* arow = a + int64_t(r) * in;
        float acc[kTok] = {};
        if (vec8) {
            for (int c = lane * 8; c < in; c += 32 * 8) {
                uint4 av = *reinterpret_cast<const uint4*>(arow + c);
#pragma unroll
                for (int tt = 0; tt < kTok; ++tt)
                    if (tt < n_tok) fma8(acc[tt], av, *reinterpret_cast<const uint4*>(p.x + (t0 + tt) * p.x_row_stride + c));
            }
        } else {
            for (int c = lane; c < in; c += 32) {
                float av = ld(arow + c);
#pragma unroll
                for (int tt = 0; tt < kTok; ++tt)
                    if (tt < n_tok) acc[tt] += av * ld(p.x + (t0 + tt) * p.x_row_stride + c);
            }
        }
#pragma unroll
        for (int tt = 0; tt < kTok; ++tt) {
            float v = acc[tt];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0 && tt < n_tok)
                p.xa[int64_t(t0 + tt) * p.n_slices * p.max_rank + blockIdx.z * p.max_rank + r] = v;
        }
    }
}

__global__ void __launch_bounds__(kExpandThreads) sgmv_expand_kernel(SgmvParams p) {
    extern __shared__ float xa_s[];  // [kTok][n_slices * max_rank]
    const int seg = blockIdx.x, slot = p.seg_slot[seg];
    if (slot <= 0) return;
    const int t0 = p.seg_indptr[seg] + blockIdx.y * kTok;
    const int n_tok = min(kTok, p.seg_indptr[seg + 1] - t0);
    if (n_tok <= 0) return;
    const int width = p.n_slices * p.max_rank;
    for (int i = threadIdx.x; i < n_tok * width; i += blockDim.x) {
        int tt = i / width, k = i - tt * width, j = k / p.max_rank;
        // Only the slot's real rank was written by the shrink; never read the rest.
        xa_s[i] = (k - j * p.max_rank) < p.slices[j].ranks[slot] ? p.xa[int64_t(t0 + tt) * width + k] : 0.0f;
    }
    __syncthreads();
    const int c = blockIdx.z * kExpandThreads + threadIdx.x;
    for (int j = 0; j < p.n_slices; ++j) {
        const LoraSlice& sl = p.slices[j];
        int col = c - sl.out_offset;
        if (col < 0 || col >= sl.out_features) continue;
        int rank = sl.ranks[slot];
        if (rank <= 0) continue;
        float scale = sl.scales[slot];
        const uint16_t* bt = sl.bt + int64_t(slot - 1) * p.slot_stride + col;
        float delta[kTok] = {};
        for (int r = 0; r < rank; ++r) {
            float b = ld(bt + int64_t(r) * sl.out_features);  // coalesced: consecutive threads, consecutive cols
#pragma unroll
            for (int tt = 0; tt < kTok; ++tt) delta[tt] += xa_s[tt * width + j * p.max_rank + r] * b;
        }
#pragma unroll
        for (int tt = 0; tt < kTok; ++tt) {
            if (tt >= n_tok) break;
            bf16* y = reinterpret_cast<bf16*>(p.y + (t0 + tt) * p.y_row_stride + c);
            *y = __float2bfloat16_rn(__bfloat162float(*y) + scale * delta[tt]);
        }
    }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

cudaError_t check(const SgmvParams& p) {
    if (p.n_slices < 1 || p.n_slices > kMaxLoraSlices || p.max_rank <= 0) return cudaErrorInvalidValue;
    return cudaSuccess;
}

}  // namespace

cudaError_t sgmv_shrink(const SgmvParams& p, cudaStream_t stream) {
    if (cudaError_t e = check(p); e != cudaSuccess) return e;
    if (p.n_segs == 0 || p.max_seg_len == 0) return cudaSuccess;
    bool vec8 = p.in_features % 8 == 0 && p.x_row_stride % 8 == 0 && p.slot_stride % 8 == 0 && aligned16(p.x);
    for (int j = 0; j < p.n_slices; ++j) vec8 = vec8 && aligned16(p.slices[j].a);
    dim3 grid(p.n_segs, (p.max_seg_len + kTok - 1) / kTok, p.n_slices);
    sgmv_shrink_kernel<<<grid, 32 * kShrinkWarps, 0, stream>>>(p, vec8);
    return cudaGetLastError();
}

cudaError_t sgmv_expand(const SgmvParams& p, cudaStream_t stream) {
    if (cudaError_t e = check(p); e != cudaSuccess) return e;
    if (p.n_segs == 0 || p.max_seg_len == 0) return cudaSuccess;
    int total_out = 0;
    for (int j = 0; j < p.n_slices; ++j) total_out = std::max(total_out, p.slices[j].out_offset + p.slices[j].out_features);
    dim3 grid(p.n_segs, (p.max_seg_len + kTok - 1) / kTok, (total_out + kExpandThreads - 1) / kExpandThreads);
    size_t smem = sizeof(float) * kTok * p.n_slices * p.max_rank;
    if (smem > 48 * 1024) return cudaErrorInvalidValue;  // max_rank * slices beyond 1024: not supported
    sgmv_expand_kernel<<<grid, kExpandThreads, smem, stream>>>(p);
    return cudaGetLastError();
}

}  // namespace loradesk::kernels
