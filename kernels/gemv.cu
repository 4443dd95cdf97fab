// Skinny GEMM for decode-sized batches (up to kGemvMaxTokens tokens): at batch 1-8 a projection is a
// stream of its weight bytes, and cuBLAS reaches ~2.6 TB/s of the H100's ~3.3 there. Each warp owns two
// output rows, streams them with 16-byte evict-first loads (several in flight per lane) and dots them with
// the batch's x rows, which stay in L1. Epilogues fuse what would otherwise be extra launches and round
// trips through memory: bias, the SwiGLU activation of the MLP (the warp owns gate row c and up row c),
// and the whole LoRA delta s·(x·Aᵀ)·Bᵀ, added to the rows before rounding: one launch per projection,
// adapters or not. The LoRA shrink xa = x·Aᵀ is shared by all rows, so blocks hand it over through memory;
// see "Forward progress" in lora_handover.cuh for why that handover cannot deadlock. The caller zeroes the two counters
// before each launch (kernel_params.h). H100, gemv_bench, Qwen3-8B sites at 1 token with the fused LoRA
// (ranks 5/37/1): qkv 20.9, o 10.4, gate_up 72.8, down 38.3 us, against 20.1, 11.0, 68.3, 41.6 without it.
#include <cuda_bf16.h>

#include <cstdint>

#include "launch_pdl.cuh"
#include "launchers.h"
#include "lora_handover.cuh"

namespace loradesk::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunk = 32 * 8;  // bf16 elements a warp reads per row per 16-byte load

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float bf(const uint16_t* p) { return __bfloat162float(*reinterpret_cast<const bf16*>(p)); }

// Slot of token t (segments are contiguous token ranges; tokens past the last segment use no adapter).
__device__ int token_slot(const SgmvParams& s, int t) {
    for (int i = 0; i < s.n_segs; ++i)
        if (t < s.seg_indptr[i + 1]) return t >= s.seg_indptr[i] ? s.seg_slot[i] : 0;
    return 0;
}

// The A row that shrink warp wid dots with x, or null where it has nothing to do (a rank past its slot's, a token on
// the base model). Reads only the step's segments and the adapter slots, so it may run before the PDL wait.
__device__ const uint16_t* shrink_a_row(const GemvParams& p, int wid) {
    const SgmvParams& s = p.sgmv;
    const int per_tok = s.n_slices * s.max_rank;
    const int t = wid / per_tok, j = (wid % per_tok) / s.max_rank, r = wid % s.max_rank;
    if (t >= p.n_tokens) return nullptr;
    const int slot = token_slot(s, t);
    if (slot <= 0 || r >= s.slices[j].ranks[slot]) return nullptr;
    return s.slices[j].a + int64_t(slot - 1) * s.slot_stride + int64_t(r) * p.in;
}

// One warp: xa[t, j*max_rank + r] = x[t] . A_j[slot(t)][r], for warp id -> (t, j, r). kSlim: one load pair in
// flight per lane instead of what the compiler unrolls to, for the rare path where a block that streamed rows
// runs shrink units while it holds its accumulators: it keeps that path from raising the kernel's registers.
template <bool kSlim>
__device__ void lora_shrink_warp(const GemvParams& p, int wid, int lane) {
    const SgmvParams& s = p.sgmv;
    const uint16_t* a = shrink_a_row(p, wid);
    if (!a) return;
    const int per_tok = s.n_slices * s.max_rank;
    const int t = wid / per_tok, j = (wid % per_tok) / s.max_rank, r = wid % s.max_rank;
    const uint16_t* x = p.x + int64_t(t) * p.x_row_stride;
    float acc = 0.0f;
    auto step = [&](int k) {
        float af[8], xf[8];
        unpack8(__ldg(reinterpret_cast<const uint4*>(a + k)), af);
        unpack8(__ldg(reinterpret_cast<const uint4*>(x + k)), xf);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc += af[e] * xf[e];
    };
    if constexpr (kSlim) {
#pragma unroll 1
        for (int k = lane * 8; k < p.in; k += kChunk) step(k);
    } else {
        for (int k = lane * 8; k < p.in; k += kChunk) step(k);
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        s.xa[int64_t(t) * per_tok + j * s.max_rank + r] = acc;
        __threadfence();  // visible device-wide before the block publishes
    }
}

// The shrink's units (lora_handover.cuh, "Forward progress": why the handover cannot deadlock) are kWarps rows of
// xa each; these run them on this kernel's blocks.
template <bool kSlim>
__device__ void run_shrink_units(const GemvParams& p, int n_units, int warp, int lane) {
    detail::run_shrink_units(p.sync, n_units, [&](int u) { lora_shrink_warp<kSlim>(p, u * kWarps + warp, lane); });
}

__device__ void wait_published(const GemvParams& p, int n_units) { detail::wait_published(p.sync, n_units); }

__device__ bool shrink_needs_help(const GemvParams& p, int n_units) {
    return detail::shrink_needs_help(p.sync, n_units);
}

// The LoRA epilogue in two halves around the wait for the shrink: lora_prefetch loads this lane's
// scale * B^T values (ranks lane and lane + 32 of rows row0/row1, per token's slot) while the shrink may still
// be running; once it is published lora_combine multiplies them with the matching xa values and warp-sums, leaving
// d[i][t] = scale * xa[t] . Bt[:, col] of row i in every lane. Only the xa loads wait.
constexpr int kLoraRankChunks = 2;  // max_rank <= 64 (gemv_supported)

template <int NT>
struct LoraPrefetch {
    float b[2][kLoraRankChunks][NT];  // 0 where the rank row is not used
    int xa_off[2];                    // j * max_rank of the slice holding row i, or -1
};

template <int NT>
__device__ void lora_prefetch(const GemvParams& p, int row0, int row1, int lane, LoraPrefetch<NT>& pf) {
    const SgmvParams& s = p.sgmv;
    int slot[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) slot[t] = t < p.n_tokens ? token_slot(s, t) : 0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int row = i == 0 ? row0 : row1;
        pf.xa_off[i] = -1;
#pragma unroll
        for (int k = 0; k < kLoraRankChunks; ++k)
#pragma unroll
            for (int t = 0; t < NT; ++t) pf.b[i][k][t] = 0.0f;
        for (int j = 0; row >= 0 && j < s.n_slices; ++j) {
            const LoraSlice& sl = s.slices[j];
            const int col = row - sl.out_offset;
            if (col < 0 || col >= sl.out_features) continue;
            pf.xa_off[i] = j * s.max_rank;
#pragma unroll
            for (int k = 0; k < kLoraRankChunks; ++k) {
                const int r = lane + 32 * k;
#pragma unroll
                for (int t = 0; t < NT; ++t)
                    if (slot[t] > 0 && r < sl.ranks[slot[t]])
                        pf.b[i][k][t] = sl.scales[slot[t]] * bf(sl.bt + int64_t(slot[t] - 1) * s.slot_stride +
                                                                int64_t(r) * sl.out_features + col);
            }
            break;
        }
    }
}

// The xa value lane needs for row i, rank chunk k, token t; 0 where b is 0 (rank rows past the slot's rank, base
// tokens), whose xa was not written and may hold anything (NaN): those are never loaded.
template <int NT>
__device__ __forceinline__ float lora_xa(const GemvParams& p, const LoraPrefetch<NT>& pf, int lane, int i, int k,
                                         int t) {
    const SgmvParams& s = p.sgmv;
    return pf.xa_off[i] >= 0 && pf.b[i][k][t] != 0.0f
               ? __ldcg(s.xa + int64_t(t) * s.n_slices * s.max_rank + pf.xa_off[i] + lane + 32 * k)
               : 0.0f;
}

template <int NT>
using LoraXa = float[2][kLoraRankChunks][NT];

template <int NT>
__device__ void lora_load_xa(const GemvParams& p, const LoraPrefetch<NT>& pf, int lane, LoraXa<NT>& xa) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int k = 0; k < kLoraRankChunks; ++k)
#pragma unroll
            for (int t = 0; t < NT; ++t) xa[i][k][t] = lora_xa<NT>(p, pf, lane, i, k, t);
}

// d[i][t] = the warp's sum of b * xa, xa(i, k, t) from the values loaded early, or loaded as they are consumed
// (lora_xa), which keeps fewer registers live where they were not loaded early.
template <int NT, class Xa>
__device__ void lora_combine(const LoraPrefetch<NT>& pf, Xa xa, float (&d)[2][NT]) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < kLoraRankChunks; ++k) v += pf.b[i][k][t] * xa(i, k, t);
            d[i][t] = warp_sum(v);
        }
}

__device__ void store(const GemvParams& p, int t, int c, float v) {
    if (p.f32_out)
        static_cast<float*>(p.y)[int64_t(t) * p.y_row_stride + c] = v;
    else
        static_cast<bf16*>(p.y)[int64_t(t) * p.y_row_stride + c] = __float2bfloat16_rn(v);
}

// NT: tokens the accumulators are sized for (n_tokens <= NT); U: 16-byte loads per row in flight per lane;
// kMode: whether p.lora holds, fixed at compile time or read from p.
enum class LoraMode { off, on, runtime };

template <int NT, int U, LoraMode kMode>
__device__ __forceinline__ void gemv_body(const GemvParams& p, int n_shrink_units) {
    const bool lora = kMode == LoraMode::runtime ? p.lora : kMode == LoraMode::on;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int block = p.reverse_block_order ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
    if (lora && block < n_shrink_units) {  // shrink-first blocks own no rows
        if (const uint16_t* a = shrink_a_row(p, block * kWarps + warp)) detail::prefetch_row_l2(a, p.in, lane);
        detail::pdl_wait();
        run_shrink_units<false>(p, n_shrink_units, warp, lane);
        return;
    }
    int row0 = -1, row1 = -1;
    float acc[2][NT];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int t = 0; t < NT; ++t) acc[i][t] = 0.0f;

    const int pair = (block - n_shrink_units) * kWarps + warp;
    if (p.swiglu) {
        const int half = p.out_rows / 2;
        if (pair < half) row0 = pair, row1 = pair + half;
    } else {
        if (2 * pair < p.out_rows) row0 = 2 * pair;
        if (2 * pair + 1 < p.out_rows) row1 = 2 * pair + 1;
    }
    const uint16_t* w0 = p.w + int64_t(row0 < 0 ? 0 : row0) * p.in;
    const uint16_t* w1 = p.w + int64_t(row1 < 0 ? 0 : row1) * p.in;
    uint4 wv[2][U];
    auto load_w = [&](int k0) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int k = k0 + u * kChunk;
            const bool ok = row0 >= 0 && k < p.in;
            const uint4 z = make_uint4(0, 0, 0, 0);
            wv[0][u] = ok ? __ldcs(reinterpret_cast<const uint4*>(w0 + k)) : z;
            wv[1][u] = ok && row1 >= 0 ? __ldcs(reinterpret_cast<const uint4*>(w1 + k)) : z;
        }
    };
    // The first weights are requested before the wait: they never depend on the predecessor (launchers.h), so
    // their DRAM latency overlaps its last microseconds instead of following them. So are, at 1-2 tokens, the
    // LoRA epilogue's scale * B^T values (adapter slots and the step's segments are in place before the step):
    // held through the loop (4-8 registers), they leave the epilogue one dependent load (xa) instead of two.
    constexpr bool kEarlyB = NT <= 2;
    LoraPrefetch<NT> pf;
    if constexpr (kEarlyB) {
        if (lora && row0 >= 0) lora_prefetch<NT>(p, row0, row1, lane, pf);
    }
    load_w(lane * 8);
    detail::pdl_wait();
    // At 1 token a warp asks, in its last iteration, whether the shrink is published and if so loads its xa
    // values there, beside that iteration's weight loads: the handover's dependent L2 round trips (publish flag,
    // xa) then overlap the stream instead of following it (H100, Qwen3-8B batch 1 with a rank-16 adapter: 6.83
    // -> 6.52 ms per step, base 6.36). The shrink-first blocks started first and have normally published long
    // before; otherwise the block takes the general path below. Not at 2 tokens: holding the xa values there took
    // ptxas from 72 to 121 registers, and asking for the flag alone measured nothing.
    constexpr bool kEarlyXa = NT == 1;
    LoraXa<NT> xa;
    bool xa_early = row0 < 0;
    for (int k0 = lane * 8; row0 >= 0 && k0 < p.in; k0 += kChunk * U) {
        uint4 xv[NT][U];
        if (k0 != lane * 8) load_w(k0);
#pragma unroll
        for (int u = 0; u < U; ++u) {  // all loads first: U x (2 + NT) 16-byte requests in flight
            const int k = k0 + u * kChunk;
            const bool ok = k < p.in;
            const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int t = 0; t < NT; ++t)
                xv[t][u] =
                    ok && t < p.n_tokens ? __ldg(reinterpret_cast<const uint4*>(p.x + t * p.x_row_stride + k)) : z;
        }
        if constexpr (kEarlyXa) {
            if (lora && k0 + kChunk * U >= p.in && detail::load_acquire(p.sync) >= n_shrink_units) {
                lora_load_xa<NT>(p, pf, lane, xa);
                xa_early = true;
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float wf[2][8];
            unpack8(wv[0][u], wf[0]);
            unpack8(wv[1][u], wf[1]);
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                float xf[8];
                unpack8(xv[t][u], xf);
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    acc[0][t] += wf[0][e] * xf[e];
                    acc[1][t] += wf[1][e] * xf[e];
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int t = 0; t < NT; ++t) acc[i][t] = warp_sum(acc[i][t]);

    if constexpr (!kEarlyB) {
        if (lora && row0 >= 0) lora_prefetch<NT>(p, row0, row1, lane, pf);
    }
    // Block-uniform (the general path has barriers): every warp of the block has its xa, or none uses it.
    bool all_early = false;
    if constexpr (kEarlyXa) {
        if (lora) all_early = __syncthreads_and(__all_sync(0xffffffffu, xa_early));
    }
    if (lora && !all_early && shrink_needs_help(p, n_shrink_units)) {
        run_shrink_units<true>(p, n_shrink_units, warp, lane);
        if (threadIdx.x == 0) wait_published(p, n_shrink_units);
        __syncthreads();
        // At 3+ tokens prefetched again rather than kept live across the shrink, which would cost registers
        // (occupancy) on the common path, where this branch is not taken.
        if (!kEarlyB && row0 >= 0) lora_prefetch<NT>(p, row0, row1, lane, pf);
    }

    if (row0 >= 0) {
        float d[2][NT];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int t = 0; t < NT; ++t) d[i][t] = 0.0f;
        if (lora) {
            if (all_early)
                lora_combine<NT>(
                    pf, [&](int i, int k, int t) { return xa[i][k][t]; }, d);
            else
                lora_combine<NT>(
                    pf, [&](int i, int k, int t) { return lora_xa<NT>(p, pf, lane, i, k, t); }, d);
        }
        // Lane l finishes (row l / NT, token l % NT); with swiglu lane t finishes token t of both rows.
        const int i = p.swiglu ? 0 : lane / NT, t = p.swiglu ? lane : lane % NT;
        const int row = i == 0 ? row0 : row1;
        if (lane < (p.swiglu ? NT : 2 * NT) && t < p.n_tokens && row >= 0) {
            float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
            for (int tt = 0; tt < NT; ++tt)
                if (tt == t) v0 = i == 0 ? acc[0][tt] + d[0][tt] : acc[1][tt] + d[1][tt], v1 = acc[1][tt] + d[1][tt];
            if (p.bias) v0 += bf(p.bias + row);
            if (p.swiglu) {
                if (p.bias) v1 += bf(p.bias + row1);
                v0 = v0 / (1.0f + __expf(-v0)) * v1;
            }
            store(p, t, row, v0);
        }
    }
}

// At 1-2 tokens (the runner's skinny GEMM) the base model and LoRA launches get kernels of their own, so that
// the handover's code costs the base model no registers (CUDA 13.0, sm_90: 64 base / 80 LoRA at 1 token, 80 / 72
// at 2). At 4-8 tokens one kernel reads p.lora, as before: specialising the base kernel there made ptxas
// schedule its loop worse (H100, gemv_bench: 8B down at 8 tokens 101 us against 73). At 4 tokens the kernel is
// bounded to 9 blocks per SM (56 registers), where ptxas (CUDA 13.0) spills 56 bytes. The runner launches none
// of the 4-8 token kernels (kSkinnyMaxTokens = 2); gemv_bench and the tests do.
template <int NT, int U, LoraMode kMode>
__global__ void __launch_bounds__(kThreads) gemv_kernel(GemvParams p, int n_shrink_units) {
    gemv_body<NT, U, kMode>(p, n_shrink_units);
}

template <int NT, int U, LoraMode kMode>
__global__ void __launch_bounds__(kThreads, 9) gemv_kernel_bounded(GemvParams p, int n_shrink_units) {
    gemv_body<NT, U, kMode>(p, n_shrink_units);
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

template <int NT, int U>
cudaError_t launch(const GemvParams& p, cudaStream_t stream) {
    const int pairs = p.swiglu ? p.out_rows / 2 : (p.out_rows + 1) / 2;
    int shrink_units = 0;  // also the number of shrink-first blocks
    if (p.lora) {
        const int warps = p.n_tokens * p.sgmv.n_slices * p.sgmv.max_rank;
        shrink_units = (warps + kWarps - 1) / kWarps;
    }
    const int blocks = shrink_units + (pairs + kWarps - 1) / kWarps;
    if constexpr (NT == 4)
        return detail::launch(gemv_kernel_bounded<NT, U, LoraMode::runtime>, blocks, kThreads, 0, stream, p,
                              shrink_units);
    else if constexpr (NT == 8)
        return detail::launch(gemv_kernel<NT, U, LoraMode::runtime>, blocks, kThreads, 0, stream, p, shrink_units);
    else if (p.lora)
        return detail::launch(gemv_kernel<NT, U, LoraMode::on>, blocks, kThreads, 0, stream, p, shrink_units);
    else
        return detail::launch(gemv_kernel<NT, U, LoraMode::off>, blocks, kThreads, 0, stream, p, shrink_units);
}

}  // namespace

bool gemv_supported(const GemvParams& p) {
    if (p.n_tokens < 1 || p.n_tokens > kGemvMaxTokens || p.in <= 0 || p.in % 8 || p.x_row_stride % 8 ||
        p.out_rows <= 0 || !aligned16(p.w) || !aligned16(p.x) || !p.y)
        return false;
    if (p.swiglu && (p.out_rows % 2 || p.f32_out)) return false;
    if (p.lora) {
        const SgmvParams& s = p.sgmv;
        if (!p.sync || s.n_slices < 1 || s.n_slices > kMaxLoraSlices || s.max_rank <= 0 ||
            s.max_rank > 32 * kLoraRankChunks || s.in_features != p.in || s.x != p.x ||
            s.x_row_stride != p.x_row_stride || s.slot_stride % 8 || !s.xa)
            return false;
        for (int j = 0; j < s.n_slices; ++j)
            if (!aligned16(s.slices[j].a)) return false;
    }
    return true;
}

cudaError_t gemv(const GemvParams& p, cudaStream_t stream) {
    if (!gemv_supported(p)) return cudaErrorInvalidValue;
    if (p.n_tokens == 1) return launch<1, 4>(p, stream);
    if (p.n_tokens == 2) return launch<2, 4>(p, stream);
    if (p.n_tokens <= 4) return launch<4, 2>(p, stream);
    return launch<8, 2>(p, stream);
}

}  // namespace loradesk::kernels
