// Weight-only quantized GEMV for 1-4 decode tokens: AWQ / GPTQ int4 and fp8 e4m3 weights, read in the
// layouts the checkpoints store (quant_params.h) and dequantized in registers, f32 accumulation, bf16 out.
// fp8 is row-major [N, K] like the bf16 GEMV: a warp owns two rows. The int4 layouts put K on the slow axis,
// so each block owns a column tile and a k-range (split-K): each split stores its partial sums in an f32
// workspace and the last block of a tile adds them in split order (deterministic: identical rows and repeated
// runs give identical bits) and rounds to bf16. Nibbles become (q - z) with the fp16 magic number (0x6400 | q = 1024 +
// q, exact); scales multiply once per group (AWQ) or per 8 rows (GPTQ). H100 SXM, quant_gemv_bench, Qwen3-8B
// projections at 1 token, us (GB/s of stored bytes), bf16 GEMV alongside (2026-11-24, third session, call 5):
//   q 4096x4096: bf16 14.5 (2314) | AWQ 8.4 (1041) | GPTQ 11.1 (787) | GPTQ act-order 16.7 (522) | fp8 9.2 (1831)
//   gate/up 12288x4096: bf16 37.5 (2688) | AWQ 18.1 (1443) | GPTQ 22.0 (1191) | act 42.5 (616) | fp8 22.5 (2235)
//   one layer's 7 projections: bf16 157.0 us, AWQ 82.3, GPTQ 99.9, GPTQ act-order 176.3, fp8 93.9.
// Not at the bandwidth floor, and not for want of conversion throughput: the int4 kernels are latency-bound
// (Nsight Compute, AWQ 4096x4096: DRAM 19% busy, issue slots 40%, SMs active 65% of the kernel), each lane
// holding only 16 words and the split-K tail (partials, arrival count, last-block sum) in series after them.
// An integer-only decode (nibble or-ed into 2^23, no f16->f32 cvt) ran more instructions and measured slower,
// and so did a second batch of rows in flight per AWQ warp (80 registers, 3 blocks per SM instead of 4).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "launch_pdl.cuh"
#include "quant_gemv.h"
#include "quant_lora.cuh"

namespace loradesk::kernels {
namespace {

using detail::bf;
using detail::lora_expand_share;

constexpr int kWarps = 8;  // int4 kernels
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxChunk = 1024;  // k rows per int4 block (x staged in shared memory)
constexpr int kFp8Warps = 4;
constexpr int kFp8Unroll = 4;  // 16-byte loads per row in flight per lane

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ __half2 as_half2(uint32_t bits) { return *reinterpret_cast<__half2*>(&bits); }

// Nibbles j and j + 4 of w as (q_j - z_lo, q_{j+4} - z_hi) in f32, zz = half2 bits of (1024 + z_lo, 1024 + z_hi).
__device__ __forceinline__ float2 nibble_pair(uint32_t w, int j, uint32_t zz) {
    const uint32_t h = ((w >> (4 * j)) & 0x000f000fu) | 0x64006400u;
    return __half22float2(__hsub2(as_half2(h), as_half2(zz)));
}

__device__ __forceinline__ uint32_t zero_pair(uint32_t z_lo, uint32_t z_hi) {
    return (0x6400u | z_lo) | ((0x6400u | z_hi) << 16);
}

__device__ __forceinline__ uint32_t nib(uint32_t w, int i) { return (w >> (4 * i)) & 0xfu; }

// Epilogue of column c for token t, by one thread (neighbouring threads take neighbouring columns).
__device__ float epilogue1(const QuantGemvParams& p, int t, int c) {
    const float add = p.bias ? bf(p.bias + c) : 0.f;
    return p.lora_expand ? add + lora_expand_share(p, t, c, 0, 1) : add;
}

// The LoRA part of the epilogue of one column, by a whole warp (each lane a share of the rank; every lane gets
// the sum): the fp8 kernel's warps own two rows each and finish them together.
__device__ float lora_warp(const QuantGemvParams& p, int t, int c) {
    return warp_sum(lora_expand_share(p, t, c, threadIdx.x & 31, 32));
}

// The fp8 kernel's LoRA expand at 1 token (fp8_lora_kernel), in no register that the weight stream holds:
// the stream is latency-bound (a lane has eight 16-byte loads in flight), so its speed is its occupancy. Qwen3-8B
// gate|up at 1 token took 27.0 us at 56 registers (9 blocks per SM), 30.6 with the expand's B^T and xa values held
// through the loop (71 registers) and 39.7 with those and the shrink's early xa (80; H200, CUPTI step trace). Before
// the wait thread 0 looks up the token's slot and each slice's rank and scale into shared memory (fp8_lora_facts:
// segments and adapter slots are in place before the step), and each warp asks L2 for its columns of B^T; after the
// stream a warp loads B^T and xa for its two rows (one L2 round trip) and sums over the ranks. 2-4 tokens keep
// lora_warp.
struct Fp8LoraFacts {
    int slot;  // 0: the token is on the base model
    int rank[kMaxLoraSlices];
    float scale[kMaxLoraSlices];
};

// Whole block (a barrier).
__device__ void fp8_lora_facts(const QuantGemvParams& p, Fp8LoraFacts& f) {
    if (threadIdx.x == 0) {
        const SgmvParams& s = p.lora;
        const int slot = detail::lora_slot(s, p.lora_token0);
        f.slot = slot;
#pragma unroll
        for (int j = 0; j < kMaxLoraSlices; ++j) {  // static indices, as lora_ref
            const bool on = slot > 0 && j < s.n_slices;
            f.rank[j] = on ? min(s.slices[j].ranks[slot], s.max_rank) : 0;
            f.scale[j] = on ? s.slices[j].scales[slot] : 0.f;
        }
    }
    __syncthreads();
}

// Where column c of this matrix finds its expand: its slice's B^T column (rank r at bt + r * stride), the token's xa
// row of that slice, and the slot's rank and scale; rank 0 where nothing is added.
struct Fp8LoraCol {
    const uint16_t* bt = nullptr;
    const float* xa = nullptr;
    int64_t stride = 0;
    int rank = 0;
    float scale = 0.f;
};

__device__ __forceinline__ Fp8LoraCol fp8_lora_col(const QuantGemvParams& p, const Fp8LoraFacts& f, int c) {
    const SgmvParams& s = p.lora;
    Fp8LoraCol lc;
    const int sc = p.lora_col + c;
#pragma unroll
    for (int j = 0; j < kMaxLoraSlices; ++j) {
        const LoraSlice& sl = s.slices[j];
        if (f.slot <= 0 || c >= p.n || j >= s.n_slices || sc < sl.out_offset || sc >= sl.out_offset + sl.out_features)
            continue;
        lc.bt = sl.bt + int64_t(f.slot - 1) * s.slot_stride + (sc - sl.out_offset);
        lc.stride = sl.out_features;
        lc.xa = s.xa + int64_t(p.lora_token0) * s.n_slices * s.max_rank + j * s.max_rank;
        lc.rank = f.rank[j], lc.scale = f.scale[j];
    }
    return lc;
}

// One warp, before the wait: asks L2 for the B^T values of its two columns (neighbours: one line per rank unless
// they lie in different slices).
__device__ void fp8_lora_prefetch_bt(const QuantGemvParams& p, const Fp8LoraFacts& f, int row0, int row1, int lane) {
    const Fp8LoraCol c0 = fp8_lora_col(p, f, row0), c1 = fp8_lora_col(p, f, row1);
    for (int r = lane; r < c0.rank; r += 32) detail::prefetch_l2(c0.bt + r * c0.stride);
    if (c1.stride != c0.stride || c1.xa != c0.xa)
        for (int r = lane; r < c1.rank; r += 32) detail::prefetch_l2(c1.bt + r * c1.stride);
}

// Shared floats an int4 kernel needs: x staged for NT tokens, then (reusing it) the per-warp partial sums of a
// 32 * C column tile that finish_tile reduces.
__host__ __device__ constexpr int smem_floats(int C, int NT) {
    return NT * kMaxChunk > kWarps * NT * 32 * C ? NT * kMaxChunk : kWarps * NT * 32 * C;
}

// x[t, k_begin .. k_begin + len) as f32 into xs[t * kMaxChunk ...].
template <int NT>
__device__ void stage_x(const QuantGemvParams& p, int k_begin, int len, float* xs) {
    for (int i = threadIdx.x; i < NT * len; i += blockDim.x) {
        const int t = i / len, kk = i % len;
        xs[t * kMaxChunk + kk] = bf(p.x + t * p.x_row_stride + k_begin + kk);
    }
}

// Sums the per-warp partials of a C * 32-column tile (lane owns columns lane * C ..) and either writes y (one
// split) or adds them into the workspace; the last split of the tile to arrive writes y and zeroes its part.
template <int C, int NT>
__device__ void finish_tile(const QuantGemvParams& p, const float (&acc)[C][NT], int tile, int n_splits, float* smem) {
    constexpr int kW = 32 * C, kQuads = NT * kW / 4;
    float4* red = reinterpret_cast<float4*>(smem);  // the x staging area, free once every warp is done with it
    __shared__ int last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int c = 0; c < C; c += 4)
            red[((warp * NT + t) * kW + lane * C + c) / 4] =
                make_float4(acc[c][t], acc[c + 1][t], acc[c + 2][t], acc[c + 3][t]);
    __syncthreads();
    const int i = threadIdx.x, t = i / (kW / 4), col = tile * kW + (i % (kW / 4)) * 4;
    const bool mine = i < kQuads && col < p.n;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (i < kQuads)
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const float4 r = red[((w * NT + t) * kW) / 4 + i % (kW / 4)];
            v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w;
        }
    int* counters = static_cast<int*>(p.workspace);
    float* parts = reinterpret_cast<float*>(static_cast<char*>(p.workspace) + kQuantGemvCounterBytes);
    if (n_splits > 1) {
        // Each split stores its partial; the last block of the tile to arrive adds them in split order.
        if (mine) __stcg(reinterpret_cast<float4*>(parts + (int64_t(blockIdx.y) * NT + t) * p.n + col), v);
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) last = atomicAdd(counters + tile, 1) == n_splits - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
        if (mine) {
            v = make_float4(0.f, 0.f, 0.f, 0.f);
            for (int sp = 0; sp < n_splits; ++sp) {
                const float4 r = __ldcg(reinterpret_cast<const float4*>(parts + (int64_t(sp) * NT + t) * p.n + col));
                v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w;
            }
        }
        if (threadIdx.x == 0) counters[tile] = 0;
    }
    if (p.bias || p.lora_expand) {  // the whole block computes the tile's epilogue, a column per thread
        __shared__ float epi[NT * kW];
        for (int e = threadIdx.x; e < NT * kW; e += blockDim.x) {
            const int c = tile * kW + e % kW;
            epi[e] = c < p.n ? epilogue1(p, e / kW, c) : 0.f;
        }
        __syncthreads();
        if (mine) {
            const float* q = epi + t * kW + (col - tile * kW);
            v.x += q[0], v.y += q[1], v.z += q[2], v.w += q[3];
        }
    }
    if (mine) {
        __nv_bfloat16* y = reinterpret_cast<__nv_bfloat16*>(p.y) + t * p.y_row_stride + col;
        y[0] = __float2bfloat16_rn(v.x), y[1] = __float2bfloat16_rn(v.y);
        y[2] = __float2bfloat16_rn(v.z), y[3] = __float2bfloat16_rn(v.w);
    }
}

// AWQ: qweight [K, N/8], lane owns one int32 column pack (8 columns) of a 256-column tile; each warp takes
// G/8 consecutive rows of every group of the block's k-range. Per group the lane keeps sum (q - z) * x per
// column and multiplies by the scale once.
template <int NT>
__global__ void __launch_bounds__(kThreads) awq_kernel(QuantGemvParams p, int chunk, int n_splits) {
    __shared__ __align__(16) float xs[smem_floats(8, NT)];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tile = blockIdx.x;
    const int packs = p.n / 8, pack = tile * 32 + lane, G = p.group_size, rows = G / kWarps;
    const int k_begin = blockIdx.y * chunk, k_end = min(p.k, k_begin + chunk);
    const bool active = pack < packs;
    const uint32_t* qw = reinterpret_cast<const uint32_t*>(p.qweight) + (active ? pack : 0);
    // The first 16 rows of the warp's first group, with that group's zeros and scales, are loaded into registers
    // before the wait: weights never depend on the predecessor, so their DRAM latency overlaps its tail. (An L2
    // prefetch of the same rows instead measured 2% slower at Qwen3-8B batch 1: 220.6 -> 215.8 tok/s, H100.)
    uint32_t wv[16];
    auto load_rows = [&](int r, int n_rows) {  // rows r .. r + min(16, n_rows)
#pragma unroll
        for (int u = 0; u < 16; ++u) wv[u] = active && u < n_rows ? __ldcs(qw + int64_t(r + u) * packs) : 0u;
    };
    auto load_group = [&](int g, uint32_t& zw, uint4& sv) {
        zw = active ? __ldg(reinterpret_cast<const uint32_t*>(p.qzeros) + int64_t(g) * packs + pack) : 0;
        sv = active ? __ldg(reinterpret_cast<const uint4*>(p.scales + int64_t(g) * p.n + pack * 8))
                    : make_uint4(0, 0, 0, 0);
    };
    uint32_t zw;
    uint4 sv;
    load_rows(k_begin + warp * rows, rows);
    load_group(k_begin / G, zw, sv);
    detail::pdl_wait();
    stage_x<NT>(p, k_begin, k_end - k_begin, xs);
    __syncthreads();
    float acc[8][NT] = {};
    for (int k0 = k_begin; k0 < k_end; k0 += G) {
        if (k0 != k_begin) load_group(k0 / G, zw, sv);
        uint32_t zz[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) zz[j] = zero_pair(nib(zw, j), nib(zw, j + 4));  // columns 2j, 2j + 1
        float gacc[8][NT] = {};
        const int r0 = k0 + warp * rows;
        for (int rb = 0; rb < rows; rb += 16) {
            if (k0 != k_begin || rb != 0) load_rows(r0 + rb, rows - rb);
#pragma unroll
            for (int u = 0; u < 16; ++u) {
                if (rb + u >= rows) break;
                const int kk = r0 + rb + u - k_begin;
                float xv[NT];
#pragma unroll
                for (int t = 0; t < NT; ++t) xv[t] = xs[t * kMaxChunk + kk];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float2 f = nibble_pair(wv[u], j, zz[j]);
#pragma unroll
                    for (int t = 0; t < NT; ++t) gacc[2 * j][t] += f.x * xv[t], gacc[2 * j + 1][t] += f.y * xv[t];
                }
            }
        }
        const __half2* s2 = reinterpret_cast<const __half2*>(&sv);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float2 s = __half22float2(s2[j]);
#pragma unroll
            for (int t = 0; t < NT; ++t)
                acc[2 * j][t] += s.x * gacc[2 * j][t], acc[2 * j + 1][t] += s.y * gacc[2 * j + 1][t];
        }
    }
    finish_tile<8, NT>(p, acc, tile, n_splits, xs);
}

// GPTQ: qweight [K/8, N], lane owns 4 columns (one 16-byte load = 4 columns x 8 rows) of a 128-column tile;
// warp w takes a contiguous run of the block's packed rows. Without act-order the 8 rows of a word share a
// group; with it (kActOrder) every row looks its group up in g_idx and gathers its zero and scale.
template <int NT, bool kActOrder>
__global__ void __launch_bounds__(kThreads) gptq_kernel(QuantGemvParams p, int chunk, int n_splits) {
    __shared__ __align__(16) float xs[smem_floats(4, NT)];
    __shared__ int gs[kActOrder ? kMaxChunk : 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tile = blockIdx.x;
    const int packs = p.n / 8, col0 = tile * 128 + lane * 4, G = p.group_size;
    const int k_begin = blockIdx.y * chunk, k_end = min(p.k, k_begin + chunk);
    const bool active = col0 < p.n;
    const int rows_total = (k_end - k_begin) / 8, rows = (rows_total + kWarps - 1) / kWarps;
    // Packed rows warp * rows + rb .. + 8 of the chunk; without act-order the first 8 are loaded before the wait
    // (see awq_kernel). The act-order kernel does not: at 4 tokens that took ptxas from 128 to 144 registers.
    uint4 wv[8];
    auto load_rows = [&](int rb) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int r = warp * rows + rb + u;
            wv[u] = active && rb + u < rows && r < rows_total
                        ? __ldcs(reinterpret_cast<const uint4*>(p.qweight + (int64_t(k_begin / 8 + r)) * p.n + col0))
                        : make_uint4(0, 0, 0, 0);
        }
    };
    if constexpr (!kActOrder) load_rows(0);
    detail::pdl_wait();
    stage_x<NT>(p, k_begin, k_end - k_begin, xs);
    if constexpr (kActOrder)
        for (int i = threadIdx.x; i < k_end - k_begin; i += kThreads) gs[i] = __ldg(p.g_idx + k_begin + i);
    __syncthreads();
    const int zshift = col0 % 8;  // this lane's 4 zeros are nibbles zshift..zshift + 3 of the zero word
    const uint32_t zplus = p.zero_plus_one ? 1u : 0u;
    const uint32_t* zp = reinterpret_cast<const uint32_t*>(p.qzeros) + (active ? col0 / 8 : 0);
    const uint16_t* sp = p.scales + (active ? col0 : 0);
    float acc[4][NT] = {};
    for (int rb = 0; rb < rows; rb += 8) {
        if (kActOrder || rb != 0) load_rows(rb);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int r = warp * rows + rb + u;
            if (rb + u >= rows || r >= rows_total) break;
            const int kk = r * 8;  // within the chunk
            float x[NT][8];
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                const float4 a = *reinterpret_cast<const float4*>(xs + t * kMaxChunk + kk);
                const float4 b = *reinterpret_cast<const float4*>(xs + t * kMaxChunk + kk + 4);
                x[t][0] = a.x, x[t][1] = a.y, x[t][2] = a.z, x[t][3] = a.w;
                x[t][4] = b.x, x[t][5] = b.y, x[t][6] = b.z, x[t][7] = b.w;
            }
            const uint32_t words[4] = {wv[u].x, wv[u].y, wv[u].z, wv[u].w};
            if constexpr (!kActOrder) {
                const int g = (k_begin + kk) / G;
                const uint32_t zw = __ldg(zp + int64_t(g) * packs);
                const uint2 sv = __ldg(reinterpret_cast<const uint2*>(sp + int64_t(g) * p.n));
                const __half2* s2 = reinterpret_cast<const __half2*>(&sv);
                const float2 s01 = __half22float2(s2[0]), s23 = __half22float2(s2[1]);
                const float s[4] = {s01.x, s01.y, s23.x, s23.y};
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const uint32_t z = nib(zw, zshift + c) + zplus;
                    const uint32_t zz = zero_pair(z, z);
                    float part[NT] = {};
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const float2 f = nibble_pair(words[c], j, zz);  // rows j and j + 4
#pragma unroll
                        for (int t = 0; t < NT; ++t) part[t] += f.x * x[t][j] + f.y * x[t][j + 4];
                    }
#pragma unroll
                    for (int t = 0; t < NT; ++t) acc[c][t] += s[c] * part[t];
                }
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int ga = gs[kk + j], gb = gs[kk + j + 4];
                    const uint32_t za = __ldg(zp + int64_t(ga) * packs), zb = __ldg(zp + int64_t(gb) * packs);
                    const uint2 sva = __ldg(reinterpret_cast<const uint2*>(sp + int64_t(ga) * p.n));
                    const uint2 svb = __ldg(reinterpret_cast<const uint2*>(sp + int64_t(gb) * p.n));
                    const __half2* sa = reinterpret_cast<const __half2*>(&sva);
                    const __half2* sb = reinterpret_cast<const __half2*>(&svb);
                    const float2 sa01 = __half22float2(sa[0]), sa23 = __half22float2(sa[1]);
                    const float2 sb01 = __half22float2(sb[0]), sb23 = __half22float2(sb[1]);
                    const float s_a[4] = {sa01.x, sa01.y, sa23.x, sa23.y}, s_b[4] = {sb01.x, sb01.y, sb23.x, sb23.y};
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const uint32_t zz = zero_pair(nib(za, zshift + c) + zplus, nib(zb, zshift + c) + zplus);
                        const float2 f = nibble_pair(words[c], j, zz);
                        const float wa = f.x * s_a[c], wb = f.y * s_b[c];
#pragma unroll
                        for (int t = 0; t < NT; ++t) acc[c][t] += wa * x[t][j] + wb * x[t][j + 4];
                    }
                }
            }
        }
    }
    finish_tile<4, NT>(p, acc, tile, n_splits, xs);
}

// The fp8 kernel's shrink at 1 token (lora_shrink), as gemv.cu and quant_mma.cu run theirs in their own launch: the
// first n_units blocks of the grid each claim a unit (kFp8Warps xa rows, a row per warp) and ask L2 for its A rows
// before the PDL wait (A is adapter weights, in place before the step), then dot them with x, publish, and run any
// unit still unclaimed (lora_handover.cuh: why no block waits for one that cannot run). The A rows go to L2 rather
// than registers (quant_mma's lora_shrink_load_a): the rows blocks share the kernel's register count, which is its
// speed (fp8_lora_facts). An sgmv_shrink launch preceded the GEMV before: its launch, its A rows from DRAM and its
// tail were on the step's path, about 5 us per call site (CUPTI trace). H200, fp8 Qwen3-8B batch 1 with a rank-16
// adapter, ms per step (base 3.058): 3.800 with that launch and the expand's values held through the loop (71
// registers), 3.924 with that launch and this epilogue, 3.565 with this shrink and this epilogue.
__device__ void fp8_shrink_block(const QuantGemvParams& p, int n_units, int warp, int lane) {
    const int u = detail::claim_shrink_unit(p.lora_sync);
    if (u < n_units)
        if (const uint16_t* a = detail::lora_shrink_a_row(p, u * kFp8Warps + warp))
            detail::prefetch_row_l2(a, p.k, lane);
    detail::pdl_wait();
    if (u >= n_units) return;
    auto run_unit = [&](int unit) { detail::lora_shrink_warp(p, unit * kFp8Warps + warp, lane); };
    run_unit(u);
    detail::publish_shrink_unit(p.lora_sync);
    detail::run_shrink_units(p.lora_sync, n_units, run_unit);  // units no block claimed yet (an unusual order)
}

// fp8 [N, K]: warp owns rows 2w, 2w + 1 of the block; lanes stride K with 16-byte loads (16 weights). The
// scale of a 16-weight run is one value (128 % 16 == 0), so each run's dot is scaled once.
// kLora (1 token with the expand): the epilogue above fp8_lora_facts. kShrink: n_units shrink blocks first
// (fp8_shrink_block), then the row blocks, whose epilogue reads xa once every unit is published
// (detail::await_shrink: normally one acquire load, the shrink blocks having started first); warps without rows stay
// to the end, as that has barriers.
template <int NT, bool kLora, bool kShrink>
__device__ __forceinline__ void fp8_body(const QuantGemvParams& p, int n_units) {
    static_assert((!kLora || NT == 1) && (!kShrink || kLora));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int block = kShrink && p.reverse_block_order ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);
    if constexpr (kShrink) {
        if (block < n_units) {
            fp8_shrink_block(p, n_units, warp, lane);
            return;
        }
    }
    const int row0 = ((block - (kShrink ? n_units : 0)) * kFp8Warps + warp) * 2;
    const bool has1 = row0 + 1 < p.n;
    const int row1 = has1 ? row0 + 1 : row0;
    for (int u = 0; row0 < p.n && u < kFp8Unroll && lane * 16 + u * 32 * 16 < p.k; ++u)  // before the wait
        for (int i = 0; i < 2; ++i)
            detail::prefetch_l2(p.w_fp8 + int64_t(i == 0 ? row0 : row1) * p.k + lane * 16 + u * 32 * 16);
    if (row0 < p.n && lane == 0) {  // and the row's first scales
        const int64_t at = p.fp8_scaling == Fp8Scaling::per_tensor    ? 0
                           : p.fp8_scaling == Fp8Scaling::per_channel ? row0
                                                                      : int64_t(row0 / 128) * ((p.k + 127) / 128);
        detail::prefetch_l2(p.w_scale + at);
    }
    __shared__ Fp8LoraFacts facts;  // kLora only
    if constexpr (kLora) {
        fp8_lora_facts(p, facts);
        if (row0 < p.n) fp8_lora_prefetch_bt(p, facts, row0, row1, lane);
    }
    detail::pdl_wait();
    if (!kShrink && row0 >= p.n) return;
    const int kb = (p.k + 127) / 128;
    const float* srow[2];
    int kmul = 0;
    for (int i = 0; i < 2; ++i) {
        const int row = i == 0 ? row0 : row1;
        switch (p.fp8_scaling) {
            case Fp8Scaling::per_tensor:
                srow[i] = p.w_scale;
                break;
            case Fp8Scaling::per_channel:
                srow[i] = p.w_scale + row;
                break;
            default:
                srow[i] = p.w_scale + int64_t(row / 128) * kb, kmul = 1;
                break;
        }
    }
    const uint8_t* w[2] = {p.w_fp8 + int64_t(row0) * p.k, p.w_fp8 + int64_t(row1) * p.k};
    float acc[2][NT] = {};
    constexpr int kStride = 32 * 16;
    for (int k0 = lane * 16; row0 < p.n && k0 < p.k; k0 += kStride * kFp8Unroll) {
        uint4 wv[2][kFp8Unroll];
#pragma unroll
        for (int u = 0; u < kFp8Unroll; ++u) {
            const int k = k0 + u * kStride;
#pragma unroll
            for (int i = 0; i < 2; ++i)
                wv[i][u] = k < p.k ? __ldcs(reinterpret_cast<const uint4*>(w[i] + k)) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kFp8Unroll; ++u) {
            const int k = k0 + u * kStride;
            if (k >= p.k) break;
            float x[NT][16];
#pragma unroll
            for (int t = 0; t < NT; ++t)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p.x + t * p.x_row_stride + k + 8 * h));
                    const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float2 f = __bfloat1622float2(b[e]);
                        x[t][8 * h + 2 * e] = f.x, x[t][8 * h + 2 * e + 1] = f.y;
                    }
                }
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const uint32_t words[4] = {wv[i][u].x, wv[i][u].y, wv[i][u].z, wv[i][u].w};
                float part[NT] = {};
#pragma unroll
                for (int e = 0; e < 8; ++e) {  // fp8 pairs
                    const __nv_fp8x2_storage_t pair = __nv_fp8x2_storage_t(words[e / 2] >> (16 * (e % 2)));
                    const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3)));
#pragma unroll
                    for (int t = 0; t < NT; ++t) part[t] += f.x * x[t][2 * e] + f.y * x[t][2 * e + 1];
                }
                const float s = __ldg(srow[i] + (k >> 7) * kmul);
#pragma unroll
                for (int t = 0; t < NT; ++t) acc[i][t] += s * part[t];
            }
        }
    }
    if constexpr (kLora) {
        // B^T of ranks lane and lane + 32 first (they never wait for the shrink), then xa once it is published.
        const Fp8LoraCol c[2] = {fp8_lora_col(p, facts, row0), fp8_lora_col(p, facts, has1 ? row1 : p.n)};
        float b[2][2];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = lane + 32 * h;
                b[i][h] = r < c[i].rank ? bf(c[i].bt + r * c[i].stride) : 0.f;
            }
        if constexpr (kShrink) {  // the whole block, warps without rows too (barriers)
            detail::await_shrink(p.lora_sync, n_units,
                                 [&](int u) { detail::lora_shrink_warp<1>(p, u * kFp8Warps + warp, lane); });
            if (row0 >= p.n) return;
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            float d = 0.f;  // xa only below the rank: rows past it are not written and may hold NaN
#pragma unroll
            for (int h = 0; h < 2; ++h)
                if (lane + 32 * h < c[i].rank) d += __ldcg(c[i].xa + lane + 32 * h) * b[i][h];
            for (int r = lane + 64; r < c[i].rank; r += 32) d += __ldcg(c[i].xa + r) * bf(c[i].bt + r * c[i].stride);
            acc[i][0] = warp_sum(acc[i][0]) + c[i].scale * warp_sum(d);
        }
    } else {
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                acc[i][t] = warp_sum(acc[i][t]);
                if (p.lora_expand) acc[i][t] += lora_warp(p, t, i == 0 ? row0 : row1);
            }
    }
    if (lane < 2 * NT) {
        const int i = lane / NT, t = lane % NT;
        float v = 0.f;
#pragma unroll
        for (int ii = 0; ii < 2; ++ii)
#pragma unroll
            for (int tt = 0; tt < NT; ++tt)
                if (ii == i && tt == t) v = acc[ii][tt];
        if (i == 0 || has1) {
            const int row = i == 0 ? row0 : row1;
            if (p.bias) v += bf(p.bias + row);
            reinterpret_cast<__nv_bfloat16*>(p.y)[t * p.y_row_stride + row] = __float2bfloat16_rn(v);
        }
    }
}

template <int NT>
__global__ void __launch_bounds__(32 * kFp8Warps) fp8_kernel(QuantGemvParams p) {
    fp8_body<NT, false, false>(p, 0);
}

// The LoRA kernels at 1 token, bounded to the base kernel's 9 blocks per SM (56 registers; see fp8_lora_facts).
template <bool kShrink>
__global__ void __launch_bounds__(32 * kFp8Warps, 9) fp8_lora_kernel(QuantGemvParams p, int n_units) {
    fp8_body<1, true, kShrink>(p, n_units);
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

// Units of the fp8 kernel's shrink: a block's warps, each one xa row.
int fp8_shrink_units(const QuantGemvParams& p) {
    return (detail::lora_shrink_warps(p.n_tokens, p.lora.n_slices, p.lora.max_rank) + kFp8Warps - 1) / kFp8Warps;
}

// k rows per int4 block, from the H100 split-K sweep of quant_gemv_bench: start at 256 (AWQ) or 512 (GPTQ) rows
// per token and halve, down to one group, while the grid is under half a wave of resident blocks (132 SMs x 4,
// 3 and 2 blocks per SM for AWQ at 1 token, AWQ at 2 and GPTQ). Longer chunks mean fewer atomics and less x
// staging per weight byte; short grids leave SMs idle. GPTQ without act-order at 1 token aims at one wave
// instead (below). Other GPUs get the same split: correct, maybe not best.
int int4_chunk(const QuantGemvParams& p, int tiles) {
    const int G = p.group_size;
    if (p.split_chunk > 0) return p.split_chunk;
    const bool awq = p.format == QuantFormat::awq_int4;
    auto round_down = [G](int c) { return c / G * G > G ? c / G * G : G; };
    if (!awq && !p.g_idx && p.n_tokens == 1) {
        // GPTQ at 1 token without act-order (80 registers since its first rows load before the wait, so 3
        // blocks per SM): the chunk whose grid is closest to one wave of 3 x 132 blocks, the longer one on a tie.
        // Sweep of the same session: 4096x4096 256 rows 11.1 us (512: 11.65), 12288x4096 and 4096x12288 1024 rows
        // 21.9 / 22.3 us (512: 22.6 / 23.2).
        constexpr int64_t kWave = 3 * 132;
        int best = round_down(kMaxChunk);
        auto off = [&](int c) {
            const int64_t b = int64_t(tiles) * ((p.k + c - 1) / c);
            return b > kWave ? b - kWave : kWave - b;
        };
        for (int c = best; c > G; c = round_down(c / 2))
            if (off(round_down(c / 2)) < off(best)) best = round_down(c / 2);
        return best;
    }
    const int min_blocks = awq ? (p.n_tokens == 1 ? 264 : 198) : 132;  // 3-4 tokens: as for 2 (not swept)
    int chunk = round_down(min((awq ? 256 : 512) * p.n_tokens, kMaxChunk));
    while (chunk > G && int64_t(tiles) * ((p.k + chunk - 1) / chunk) < min_blocks) chunk = round_down(chunk / 2);
    return chunk;
}

template <int NT>
cudaError_t launch(const QuantGemvParams& p, cudaStream_t stream) {
    if (p.format == QuantFormat::fp8_e4m3) {
        const int blocks = (p.n + 2 * kFp8Warps - 1) / (2 * kFp8Warps);
        if constexpr (NT == 1) {
            if (p.lora_shrink) {
                const int units = fp8_shrink_units(p);
                return detail::launch(fp8_lora_kernel<true>, units + blocks, 32 * kFp8Warps, 0, stream, p, units);
            }
            if (p.lora_expand) return detail::launch(fp8_lora_kernel<false>, blocks, 32 * kFp8Warps, 0, stream, p, 0);
        }
        return detail::launch(fp8_kernel<NT>, blocks, 32 * kFp8Warps, 0, stream, p);
    }
    const bool awq = p.format == QuantFormat::awq_int4;
    const int tiles = awq ? (p.n / 8 + 31) / 32 : (p.n + 127) / 128;
    const int chunk = int4_chunk(p, tiles), splits = (p.k + chunk - 1) / chunk;
    const dim3 grid{unsigned(tiles), unsigned(splits)};
    if (awq) return detail::launch(awq_kernel<NT>, grid, kThreads, 0, stream, p, chunk, splits);
    if (p.g_idx) return detail::launch(gptq_kernel<NT, true>, grid, kThreads, 0, stream, p, chunk, splits);
    return detail::launch(gptq_kernel<NT, false>, grid, kThreads, 0, stream, p, chunk, splits);
}

}  // namespace

bool quant_gemv_supported(const QuantGemvParams& p) {
    if (p.n_tokens < 1 || p.n_tokens > kQuantGemvMaxTokens || p.n <= 0 || p.n > kQuantGemvMaxColumns || p.k <= 0 ||
        !p.x || !p.y || p.k_order)
        return false;
    if (p.n_tokens > 1 && (p.x_row_stride < p.k || p.y_row_stride < p.n)) return false;
    if (p.lora_expand && (p.lora.n_slices < 1 || p.lora.n_slices > kMaxLoraSlices)) return false;
    // The shrink in the launch: the fp8 kernel at 1 token only (x's alignment and k % 16 are its conditions below).
    if (p.lora_shrink && (p.format != QuantFormat::fp8_e4m3 || p.n_tokens != 1 || p.x_before_wait ||
                          !detail::lora_shrink_operands_ok(p)))
        return false;
    if (p.format == QuantFormat::fp8_e4m3)
        return p.k % 16 == 0 && p.x_row_stride % 8 == 0 && aligned16(p.x) && aligned16(p.w_fp8) && p.w_scale;
    if (p.format == QuantFormat::awq_int4 && p.g_idx) return false;
    const int G = p.group_size;
    if (G <= 0 || G % 32 || G > kMaxChunk || p.split_chunk < 0 || p.split_chunk % G || p.split_chunk > kMaxChunk)
        return false;
    return p.n % 8 == 0 && p.k % G == 0 && p.qweight && p.qzeros && p.scales && p.workspace && aligned16(p.qweight) &&
           aligned16(p.scales) && aligned16(p.workspace);
}

cudaError_t quant_gemv(const QuantGemvParams& p, cudaStream_t stream) {
    if (!quant_gemv_supported(p)) return cudaErrorInvalidValue;
    switch (p.n_tokens) {
        case 1:
            return launch<1>(p, stream);
        case 2:
            return launch<2>(p, stream);
        case 3:
            return launch<3>(p, stream);
        default:
            return launch<4>(p, stream);
    }
}

}  // namespace loradesk::kernels
