// Weight-only int4 / fp8 GEMM on tensor cores for decode batches of 5-32 tokens (quant_mma.h): AWQ, GPTQ and
// fp8 e4m3 weights read in their checkpoint layouts straight from DRAM into registers, dequantized to bf16 there
// and multiplied with mma.sync m16n8k16 (bf16 in, f32 accumulators). Each weight byte is read once per launch, where
// the dequantize path it replaces wrote a bf16 copy and read it back through cuBLAS.
//
// The weights are the A operand (16 output columns x 16 k) and the tokens the B operand (16 k x 8 tokens), so
// a batch of 8 fills one mma. A lane (group g = lane / 4, t = lane % 4) of a warp owns 8 output columns
// (8g .. 8g + 7 of the warp's 64) and, per 32-row chunk of k, rows 8t .. 8t + 7: for GPTQ that is one packed
// word per column (two 16-byte loads), for AWQ eight words of one 8-column pack, for fp8 ([N, K] bytes) 8 bytes
// per column. The mma's k order is free as
// long as A and B agree, so each lane's fragment registers hold pairs of its own rows: (i, i + 4) for GPTQ
// (nibbles i and i + 4 of a word land in the two bf16 halves with one mask) and (2i, 2i + 1) for AWQ (a byte
// permute brings row 2i's and row 2i + 1's nibbles together, and fp8's bytes 2i and 2i + 1); x is read as 16 bytes of
// the same rows and paired to match. Column slot 2j of a lane is row g of A tile j, slot 2j + 1 row g + 8. Three chunks
// of weights per warp are in registers at a time (two for fp8), the first requested before the PDL wait.
//
// Nibbles become bf16 (128 + q) by or-ing in 0x4300 (exact); subtracting (128 + z) gives q - z exactly, and one
// bf16 multiply by the scale (fp16 rounded to bf16, as vLLM's Marlin does for bf16 models) rounds the weight
// once. An e4m3 byte shifted left by 4 under its replicated sign is the bf16 of its value times 2^-120 (exact,
// subnormals too); one bf16 multiply by 2^120 (exact) and one by the scale (rounded to bf16) give the weight.
//
// A block of 4 warps takes CG groups of 64 columns and a range of k rows; its warps split the rows in 4 / CG
// parts, and x for the range is staged in shared memory once. The parts are summed in shared memory, the splits
// across blocks through f32 partials that the last block of a tile sums in split order (deterministic, as
// quant_gemv), adds the bias and rounds to bf16. The LoRA expand is shared out by rank over the splits, each adding
// its share to its partial; its shrink is either a launch just before or, with lora_shrink, blocks of this launch
// that run first (lora_handover.cuh) while the others stream weights, which wait for it only before the epilogue. CG
// and the split come from the L2 traffic they cost (col_groups below). At 32 tokens ptxas keeps the kernels at 168
// registers (3 blocks per SM) with a 4-8 byte spill (int4; fp8 none); up to 24 tokens nothing spills.
//
// H100, quant_mma_bench (Qwen3-8B call sites, weights from DRAM), us per layer's four call sites, 2026-11-24
// fourth session, call 3: 8 tokens AWQ 75.6 / GPTQ 71.1 (bf16 cuBLAS 155.6, AWQ dequantize + cuBLAS 376.1);
// 16 tokens 85.8 / 78.6 (157.8); 32 tokens 121.4 / 114.2 (155.8); 64 tokens, two launches, 240 / 227 (158.6).
// fp8 (call 6): 8 tokens 133.6, 32 tokens 181.8 (fp8 dequantize + cuBLAS 359.1 / 360.6); int4 as in call 3.
// What it is not yet: a multi-stage shared-memory pipeline for the weights (Marlin's), which would let fewer warps
// keep enough bytes in flight and so need fewer splits; at 32 tokens the o projection (4096 x 4096) reaches only
// 490 GB/s because its x staging and partials each move about as many bytes through L2 as its weights.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "launch_pdl.cuh"
#include "lora_handover.cuh"
#include "quant_lora.cuh"
#include "quant_mma.h"

namespace loradesk::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kWarpCols = 64;
// 32-row chunks of weights in registers per warp: int4 3 (1 KiB per warp each), fp8 2 (2 KiB each).
template <QuantFormat F>
constexpr int kSlots = F == QuantFormat::fp8_e4m3 ? 2 : 3;
constexpr int kTargetWarps = 12 * 132;                  // the split aims at 12 warps per SM of an H100 (3 blocks)
constexpr int kMaxXBytes = 64 * 1024;                   // x staged per block: 8 NT tokens x block rows, bf16
constexpr int kMaxSmem = kMaxXBytes + 128 * 8 * 4 * 2;  // with the row padding

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}

// (v & 0x000f000f) | 0x43004300: the nibbles at bits 0 and 16 as the bf16 pair (128 + lo, 128 + hi).
__device__ __forceinline__ uint32_t magic_pair(uint32_t v) {
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(v), "n"(0x000f000f), "n"(0x43004300));
    return r;
}

__device__ __forceinline__ __nv_bfloat162 as_bf2(uint32_t v) { return *reinterpret_cast<__nv_bfloat162*>(&v); }
__device__ __forceinline__ uint32_t as_u32(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }

// (128 + q) pair -> bf16((q - z) * s); zz = (128 + z) pair, s the scale pair.
__device__ __forceinline__ uint32_t dequant(uint32_t magic, uint32_t zz, uint32_t s) {
    return as_u32(__hmul2(__hsub2(as_bf2(magic), as_bf2(zz)), as_bf2(s)));
}

// One 32-row chunk of weights as a lane holds it, and (in the chunk that starts a group) the group's zero word
// and 8 scales.
template <QuantFormat F>
struct Chunk {
    static constexpr int kWords = F == QuantFormat::fp8_e4m3 ? 16 : 8;
    uint32_t w[kWords];
    uint32_t zw;  // int4: the group's zero word; fp8 block128: the block's scale (f32 bits)
    uint4 sv;     // int4: the group's 8 fp16 scales
};

template <QuantFormat F>
struct Lane {
    const QuantGemvParams& p;
    int t, col8, k_begin;
    bool active;

    // Whether chunk c starts a group of zeros and scales (or is the warp's first): then it loads them. fp8's
    // groups are the 128-row scale blocks, or the whole of k for per-tensor and per-channel scales.
    __device__ bool group_start(int c) const {
        if constexpr (F == QuantFormat::fp8_e4m3)
            return c == 0 || (p.fp8_scaling == Fp8Scaling::block128 && (k_begin + 32 * c) % 128 == 0);
        else
            return c == 0 || (k_begin + 32 * c) % p.group_size == 0;
    }

    __device__ void load_weights(int c, Chunk<F>& ch) const {
        const int k0 = k_begin + 32 * c, packs = p.n / 8;
        if (!active) {
#pragma unroll
            for (int i = 0; i < Chunk<F>::kWords; ++i) ch.w[i] = 0;
            return;
        }
        if constexpr (F == QuantFormat::awq_int4) {
            const uint32_t* q = reinterpret_cast<const uint32_t*>(p.qweight) + int64_t(k0 + 8 * t) * packs + col8 / 8;
#pragma unroll
            for (int i = 0; i < 8; ++i) ch.w[i] = __ldcs(q + int64_t(i) * packs);
        } else if constexpr (F == QuantFormat::gptq_int4) {
            const uint4* q = reinterpret_cast<const uint4*>(p.qweight + int64_t(k0 / 8 + t) * p.n + col8);
            const uint4 a = __ldcs(q), b = __ldcs(q + 1);
            ch.w[0] = a.x, ch.w[1] = a.y, ch.w[2] = a.z, ch.w[3] = a.w;
            ch.w[4] = b.x, ch.w[5] = b.y, ch.w[6] = b.z, ch.w[7] = b.w;
        } else {  // fp8 [N, K]: 8 bytes of rows 8t .. 8t + 7 per column
#pragma unroll
            for (int s = 0; s < 8; ++s) {
                const uint2 v = __ldcs(reinterpret_cast<const uint2*>(p.w_fp8 + int64_t(col8 + s) * p.k + k0 + 8 * t));
                ch.w[2 * s] = v.x, ch.w[2 * s + 1] = v.y;
            }
        }
        if constexpr (F == QuantFormat::fp8_e4m3) {
            if (p.fp8_scaling == Fp8Scaling::block128 && group_start(c))
                ch.zw = __float_as_uint(__ldg(p.w_scale + int64_t(col8 / 128) * ((p.k + 127) / 128) + k0 / 128));
        } else if (c == 0 || k0 % p.group_size == 0) {
            const int g = k0 / p.group_size;
            ch.zw = __ldg(reinterpret_cast<const uint32_t*>(p.qzeros) + int64_t(g) * packs + col8 / 8);
            ch.sv = __ldg(reinterpret_cast<const uint4*>(p.scales + int64_t(g) * p.n + col8));
        }
    }
};

// Column of slot s in the lane's 8: AWQ's nibble s holds column kAwqOrder[s] = 2 (s % 4) + s / 4, GPTQ's column s.
template <QuantFormat F>
__device__ __forceinline__ int column_of_slot(int s) {
    return F == QuantFormat::awq_int4 ? 2 * (s % 4) + s / 4 : s;
}

// zz = (128 + z) pairs and s2 = bf16 scale pairs of the lane's 8 column slots for an int4 group.
template <QuantFormat F>
__device__ __forceinline__ void decode_group(const QuantGemvParams& p, uint32_t zw, uint4 sv, uint32_t (&zz)[8],
                                             uint32_t (&s2)[8]) {
    const uint32_t plus = F == QuantFormat::gptq_int4 && p.zero_plus_one ? 1u : 0u;
    const __half* sh = reinterpret_cast<const __half*>(&sv);
#pragma unroll
    for (int s = 0; s < 8; ++s) {
        const uint32_t z = 0x4300u + ((zw >> (4 * s)) & 0xfu) + plus;  // bf16 128 + z (z <= 16)
        zz[s] = z | (z << 16);
        s2[s] = as_u32(__float2bfloat162_rn(__half2float(sh[column_of_slot<F>(s)])));
    }
}

// fp8: zz = the bf16 pair (2^120, 2^120) that turns the shifted e4m3 bits into their value, s2 = the slots'
// scales (block128: the block's, loaded with the chunk as f32 bits in block).
__device__ __forceinline__ void decode_fp8_scales(const QuantGemvParams& p, int col8, uint32_t block, uint32_t (&zz)[8],
                                                  uint32_t (&s2)[8]) {
#pragma unroll
    for (int s = 0; s < 8; ++s) {
        float scale = __uint_as_float(block);
        if (p.fp8_scaling == Fp8Scaling::per_tensor)
            scale = __ldg(p.w_scale);
        else if (p.fp8_scaling == Fp8Scaling::per_channel)
            scale = col8 + s < p.n ? __ldg(p.w_scale + col8 + s) : 0.f;
        zz[s] = 0x7b807b80u;  // bf16 2^120
        s2[s] = as_u32(__float2bfloat162_rn(scale));
    }
}

// The (128 + q) pair of column slot s and row pair i of the chunk (see the file comment); for fp8 the e4m3 bytes
// of rows 2i and 2i + 1 as bf16 bit patterns worth 2^-120 of their value: the byte shifted left by 4 puts
// exponent and mantissa in place, and prmt's sign-replicating selector supplies the sign bit (also subnormals
// stay exact, as bf16 subnormals).
template <QuantFormat F>
__device__ __forceinline__ uint32_t weight_pair(const uint32_t (&w)[Chunk<F>::kWords], int s, int i) {
    if constexpr (F == QuantFormat::gptq_int4) {
        return magic_pair(w[s] >> (4 * i));
    } else if constexpr (F == QuantFormat::awq_int4) {
        const uint32_t b = uint32_t(s / 2), sel = b | (b << 4) | ((4 + b) << 8) | ((4 + b) << 12);
        const uint32_t v = prmt(w[2 * i], w[2 * i + 1], sel);  // byte b of rows 2i and 2i + 1 at bytes 0 and 2
        return magic_pair(s % 2 ? v >> 4 : v);
    } else {
        const uint32_t b = uint32_t(2 * (i % 2)), sel = b | ((8 | b) << 4) | ((b + 1) << 8) | ((9 | b) << 12);
        return (prmt(w[2 * s + i / 2], 0u, sel) << 4) & 0x87f087f0u;  // [sign byte, byte] x 2, shifted
    }
}

// The x pair matching weight_pair's row pair i, from 16 bytes of x (rows 0..7 of the lane).
template <QuantFormat F>
__device__ __forceinline__ uint32_t x_pair(const uint4& x, int i) {
    const uint32_t u[4] = {x.x, x.y, x.z, x.w};
    if constexpr (F == QuantFormat::gptq_int4)
        return prmt(u[i / 2], u[i / 2 + 2], i % 2 ? 0x7632u : 0x5410u);  // rows i and i + 4
    else
        return u[i];  // rows 2i and 2i + 1
}

// int4: (128 + q) pair -> bf16((q - z) * s); fp8: (e4m3 * 2^-120) pair -> bf16(e4m3 * s), the first product exact.
template <QuantFormat F>
__device__ __forceinline__ uint32_t dequant_pair(uint32_t v, uint32_t zz, uint32_t s) {
    if constexpr (F == QuantFormat::fp8_e4m3)
        return as_u32(__hmul2(__hmul2(as_bf2(v), as_bf2(zz)), as_bf2(s)));
    else
        return dequant(v, zz, s);
}

// xs points at the lane's 16 bytes of token g of the first token tile; tiles are x_tile_stride apart.
template <int NT, QuantFormat F>
__device__ __forceinline__ void multiply(const Chunk<F>& ch, const __nv_bfloat16* xs, int x_tile_stride,
                                         const uint32_t (&zz)[8], const uint32_t (&s2)[8], float (&acc)[4][NT][4]) {
    uint32_t b[NT][4];
#pragma unroll
    for (int u = 0; u < NT; ++u) {
        const uint4 x = *reinterpret_cast<const uint4*>(xs + u * x_tile_stride);
#pragma unroll
        for (int i = 0; i < 4; ++i) b[u][i] = x_pair<F>(x, i);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int step = 0; step < 2; ++step) {
            const int i0 = 2 * step, i1 = 2 * step + 1;  // k rows 2t, 2t + 1 and 2t + 8, 2t + 9 of the mma
            const uint32_t a[4] = {dequant_pair<F>(weight_pair<F>(ch.w, 2 * j, i0), zz[2 * j], s2[2 * j]),
                                   dequant_pair<F>(weight_pair<F>(ch.w, 2 * j + 1, i0), zz[2 * j + 1], s2[2 * j + 1]),
                                   dequant_pair<F>(weight_pair<F>(ch.w, 2 * j, i1), zz[2 * j], s2[2 * j]),
                                   dequant_pair<F>(weight_pair<F>(ch.w, 2 * j + 1, i1), zz[2 * j + 1], s2[2 * j + 1])};
#pragma unroll
            for (int u = 0; u < NT; ++u) mma(acc[j][u], a, b[u][i0], b[u][i1]);
        }
}

// The LoRA code (shrink blocks, expand, the early quad lookup) is compiled into the kernels of up to 8 tokens only
// (kQuantMmaMaxLoraTokens), the only ones the runner fuses LoRA into: the 32-token kernels keep their registers.
template <int NT>
constexpr bool kLora = NT == 1;
static_assert(kQuantMmaMaxLoraTokens == 8);

// Sums the k parts of the block's partial sums (sums[kp][token][column], in kp order) and the block's share of the
// LoRA expand, then with one split writes y (bias added), else stores the split's partial and the last block of
// the tile to arrive sums all of them in split order and writes y.
template <int NT, int CG>
__device__ void finish(const QuantGemvParams& p, const float* sums, int tile, int split, int n_splits, int n_units,
                       const detail::LoraQuad& first_quad) {
    constexpr int KP = kWarps / CG, kTileCols = CG * kWarpCols;
    __shared__ int last;
    int* counters = static_cast<int*>(p.workspace);
    float* parts = reinterpret_cast<float*>(static_cast<char*>(p.workspace) + kQuantGemvCounterBytes);
    const int quads = p.n_tokens * kTileCols / 4;
    auto quad_at = [&](int e, int& t, int& col) {
        t = e / (kTileCols / 4), col = tile * kTileCols + (e % (kTileCols / 4)) * 4;
        return col < p.n;
    };
    if (kLora<NT> && n_units > 0) {  // the fused shrink's xa, before any block adds its share of the expand
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        detail::await_shrink(p.lora_sync, n_units,
                             [&](int u) { detail::lora_shrink_warp(p, u * kWarps + warp, lane); });
    }
    // The block's sum, plus its share of the LoRA expand: split s adds ranks s, s + splits, ..., so the expand's
    // loads are spread over every block of the tile instead of lengthening the last one's serial tail.
    auto block_sum = [&](int e, int t, int col) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int kp = 0; kp < KP; ++kp) {
            const float4 r =
                *reinterpret_cast<const float4*>(sums + (kp * 8 * NT + t) * kTileCols + col - tile * kTileCols);
            v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w;
        }
        if (kLora<NT> && p.lora_expand) {
            const detail::LoraQuad q = e == int(threadIdx.x) ? first_quad : detail::lora_quad(p, t, col);
            const float4 d = detail::lora_expand_quad(p, q, t, col, split, n_splits);
            v.x += d.x, v.y += d.y, v.z += d.z, v.w += d.w;
        }
        return v;
    };
    if (n_splits > 1) {
        for (int e = threadIdx.x; e < quads; e += kThreads) {
            int t, col;
            if (quad_at(e, t, col))
                __stcg(reinterpret_cast<float4*>(parts + (int64_t(split) * p.n_tokens + t) * p.n + col),
                       block_sum(e, t, col));
        }
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) last = atomicAdd(counters + tile, 1) == n_splits - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
    }
    for (int e = threadIdx.x; e < quads; e += kThreads) {
        int t, col;
        if (!quad_at(e, t, col)) continue;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n_splits > 1) {
            for (int sp = 0; sp < n_splits; ++sp) {
                const float4 r =
                    __ldcg(reinterpret_cast<const float4*>(parts + (int64_t(sp) * p.n_tokens + t) * p.n + col));
                v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w;
            }
        } else {
            v = block_sum(e, t, col);
        }
        if (p.bias) {
            const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(p.bias + col);
            const float2 b0 = __bfloat1622float2(b[0]), b1 = __bfloat1622float2(b[1]);
            v.x += b0.x, v.y += b0.y, v.z += b1.x, v.w += b1.y;
        }
        __nv_bfloat162* y = reinterpret_cast<__nv_bfloat162*>(p.y + int64_t(t) * p.y_row_stride + col);
        y[0] = __floats2bfloat162_rn(v.x, v.y), y[1] = __floats2bfloat162_rn(v.z, v.w);
    }
    if (n_splits > 1 && threadIdx.x == 0) counters[tile] = 0;
}

// Elements per staged x row: the block's rows plus padding that puts consecutive tokens' rows 64 bytes apart
// modulo 128, so a warp's 16-byte reads (8 tokens x 4 lanes) hit distinct banks.
__host__ __device__ constexpr int x_stride(int block_rows) { return block_rows + (96 - block_rows % 64) % 64; }

// Block: CG groups of 64 columns; its 4 warps take column group warp % CG and k part warp / CG of the block's rows.
// Up to 8 tokens the grid is one-dimensional: n_units blocks of the fused shrink first (lora_shrink, else none), then
// the tiles of split 0, of split 1, and so on. Above, it is (tiles, splits), and blockIdx gives the tile and split
// whenever they are needed, where derived values would be held in registers through the loop (ptxas spilled 20-28
// bytes at 32 tokens, against 8-16).
template <int NT, QuantFormat F, int CG>
__global__ void __launch_bounds__(kThreads, 3)
    int4_mma_kernel(QuantGemvParams p, int block_rows, int n_splits, int tiles, int n_units) {
    constexpr int KP = kWarps / CG, kTileCols = CG * kWarpCols;
    extern __shared__ __align__(16) uint8_t smem[];
    auto* xs = reinterpret_cast<__nv_bfloat16*>(smem);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int block = kLora<NT> && p.reverse_block_order ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);
    if (kLora<NT> && block < n_units) {  // a shrink block: x is its predecessor's output
        // One unit claimed and its A rows requested before the wait (quant_lora.cuh, lora_shrink_load_a), then x.
        const int u = detail::claim_shrink_unit(p.lora_sync);
        detail::ShrinkEarlyA early;
        if (u < n_units) detail::lora_shrink_load_a(p, u * kWarps + warp, lane, early);
        detail::pdl_wait();
        if (u >= n_units) return;
        detail::lora_shrink_warp_early(p, u * kWarps + warp, lane, early);
        detail::publish_shrink_unit(p.lora_sync);
        detail::run_shrink_units(p.lora_sync, n_units,  // units no block claimed yet (an unusual dispatch order)
                                 [&](int u2) { detail::lora_shrink_warp(p, u2 * kWarps + warp, lane); });
        return;
    }
    const int tile = kLora<NT> ? (block - n_units) % tiles : int(blockIdx.x);
    const int split = kLora<NT> ? (block - n_units) / tiles : int(blockIdx.y);
    const int col8 = tile * kTileCols + (warp % CG) * kWarpCols + 8 * g;
    const int blk_begin = split * block_rows, blk_rows = min(p.k, blk_begin + block_rows) - blk_begin;
    const int blk_chunks = blk_rows / 32, per_part = (blk_chunks + KP - 1) / KP;
    const int c_begin = min(blk_chunks, (warp / CG) * per_part);
    const int n_chunks = min(blk_chunks, c_begin + per_part) - c_begin;
    const Lane<F> ln{p, t, col8, blk_begin + 32 * c_begin, col8 < p.n};

    // Weights never depend on the predecessor: the first chunks are requested before the PDL wait.
    constexpr int kS = kSlots<F>;
    Chunk<F> ch[kS];
#pragma unroll
    for (int s = 0; s < kS; ++s)
        if (s < n_chunks) ln.load_weights(s, ch[s]);
    // The LoRA expand's slot and slice lookups for this thread's first quad of the epilogue (finish), before the wait:
    // segments and adapter slots are in place before the step starts, so they never depend on the predecessor.
    detail::LoraQuad first_quad;
    first_quad.kind = 0;
    if (kLora<NT> && p.lora_expand && threadIdx.x < p.n_tokens * kTileCols / 4) {
        const int qt = threadIdx.x / (kTileCols / 4), qcol = tile * kTileCols + threadIdx.x % (kTileCols / 4) * 4;
        if (qcol < p.n) first_quad = detail::lora_quad(p, qt, qcol);
        // This split's B^T rows of the tile, asked of L2 (one thread per 64 columns, a 128-byte line): the expand
        // in finish() then reads them from there, after the shrink, instead of from DRAM behind the weight stream.
        if (first_quad.kind == 1 && qcol % 64 == 0)
            for (int r = split; r < first_quad.ref.rank; r += n_splits)
                detail::prefetch_l2(first_quad.ref.bt + int64_t(r) * first_quad.ref.stride);
    }
    if (!p.x_before_wait) detail::pdl_wait();
    // x [8 NT tokens][block rows] into shared memory once (zero past n_tokens); every warp reads it from there.
    // Through L2 (.cg), the coherence point: with x_before_wait its writer finished two kernels back.
    const int stride = x_stride(block_rows), row_quads = blk_rows / 8;
    for (int i = threadIdx.x; i < 8 * NT * row_quads; i += kThreads) {
        const int tok = i / row_quads, q = i % row_quads;
        *reinterpret_cast<uint4*>(xs + tok * stride + 8 * q) =
            tok < p.n_tokens
                ? __ldcg(reinterpret_cast<const uint4*>(p.x + int64_t(tok) * p.x_row_stride + blk_begin + 8 * q))
                : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();

    float acc[4][NT][4] = {};
    uint32_t zz[8], s2[8];
    const __nv_bfloat16* xl = xs + g * stride + 32 * c_begin + 8 * t;
    for (int c0 = 0; c0 < n_chunks; c0 += kS) {
#pragma unroll
        for (int s = 0; s < kS; ++s) {
            const int c = c0 + s;
            if (c >= n_chunks) break;
            if constexpr (F == QuantFormat::fp8_e4m3) {
                if (ln.group_start(c)) decode_fp8_scales(p, col8, ch[s].zw, zz, s2);
            } else if (c == 0 || (ln.k_begin + 32 * c) % p.group_size == 0) {
                decode_group<F>(p, ch[s].zw, ch[s].sv, zz, s2);
            }
            multiply<NT, F>(ch[s], xl + 32 * c, 8 * stride, zz, s2, acc);
            if (c + kS < n_chunks) ln.load_weights(c + kS, ch[s]);
        }
    }

    // Accumulator e of tile j, token tile u: column slot 2j (e < 2) or 2j + 1, token 8u + 2t + e % 2. The sums
    // [KP][8 NT][tile columns] reuse the x area once every warp is done with it.
    __syncthreads();
    float* sums = reinterpret_cast<float*>(smem);
    const int wcol = (warp % CG) * kWarpCols + 8 * g;
    float* mine = sums + (warp / CG) * 8 * NT * kTileCols;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int u = 0; u < NT; ++u)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                mine[(8 * u + 2 * t + e % 2) * kTileCols + wcol + column_of_slot<F>(2 * j + e / 2)] = acc[j][u][e];
    __syncthreads();
    if (p.x_before_wait) detail::pdl_wait();  // the epilogue reads xa, which the predecessor (the shrink) writes
    finish<NT, CG>(p, sums, tile, split, n_splits, n_units, first_quad);
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

// The fused shrink reads p.x and each slice's A rows with 16-byte loads and needs the expand and its counters.
bool shrink_supported(const QuantGemvParams& p) {
    return !p.x_before_wait && detail::lora_shrink_operands_ok(p);  // x's alignment and k % 32: the kernel's own
}

// Units of the fused shrink: a block's warps, each one xa row (quant_lora.cuh).
int quant_mma_shrink_units(const QuantGemvParams& p) {
    return (detail::lora_shrink_warps(p.n_tokens, p.lora.n_slices, p.lora.max_rank) + kWarps - 1) / kWarps;
}

int max_block_rows(int n_tokens) { return kMaxXBytes / (2 * 8 * ((n_tokens + 7) / 8)) / 32 * 32; }

// Column groups per block: the choice that moves the fewest extra bytes through L2 per weight byte. A block
// stages x for its rows once, T / (16 CG) bytes per weight byte (T = tokens rounded up to 8), so wider blocks
// amortise it; but wider blocks mean fewer warps per split, hence more splits, whose f32 partials are written
// and read back in series at the end: 16 S T / K per weight byte, counted twice. On the H100 sweep of
// quant_mma_bench (Qwen3-8B call sites at 8, 16 and 32 tokens) this picks the fastest setting or one within 4%.
int col_groups(const QuantGemvParams& p) {
    if (p.mma_col_groups > 0) return p.mma_col_groups;
    const int64_t t8 = 8 * ((p.n_tokens + 7) / 8);
    int best = 1;
    int64_t best_cost = 0;
    for (int cg : {1, 2, 4}) {
        const int splits = quant_mma_split(p.n, p.k, p.split_chunk, p.n_tokens, cg).splits;
        const int64_t cost = t8 * p.k / cg + (splits > 1 ? 512 * splits * t8 : 0);  // x 16 K
        if (cg == 1 || cost < best_cost) best = cg, best_cost = cost;
    }
    return best;
}

template <int NT, QuantFormat F, int CG>
cudaError_t launch_kernel(const QuantGemvParams& p, cudaStream_t stream) {
    static const cudaError_t attr =
        cudaFuncSetAttribute(int4_mma_kernel<NT, F, CG>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem);
    if (attr != cudaSuccess) return attr;
    const QuantMmaSplit sp = quant_mma_split(p.n, p.k, p.split_chunk, p.n_tokens, CG);
    const std::size_t x_bytes = std::size_t(8 * NT) * x_stride(sp.chunk) * 2;
    const std::size_t smem = std::max<std::size_t>(x_bytes, std::size_t(8 * NT) * kWarps * kWarpCols * 4);
    const int tiles = (p.n + CG * kWarpCols - 1) / (CG * kWarpCols);
    const int units = p.lora_shrink ? quant_mma_shrink_units(p) : 0;
    const dim3 grid =
        kLora<NT> ? dim3(unsigned(units + tiles * sp.splits)) : dim3(unsigned(tiles), unsigned(sp.splits));
    return detail::launch(int4_mma_kernel<NT, F, CG>, grid, kThreads, smem, stream, p, sp.chunk, sp.splits, tiles,
                          units);
}

template <int NT, QuantFormat F>
cudaError_t launch_format(const QuantGemvParams& p, cudaStream_t stream) {
    switch (col_groups(p)) {
        case 1:
            return launch_kernel<NT, F, 1>(p, stream);
        case 2:
            return launch_kernel<NT, F, 2>(p, stream);
        default:
            return launch_kernel<NT, F, 4>(p, stream);
    }
}

template <int NT>
cudaError_t launch(const QuantGemvParams& p, cudaStream_t stream) {
    switch (p.format) {
        case QuantFormat::awq_int4:
            return launch_format<NT, QuantFormat::awq_int4>(p, stream);
        case QuantFormat::gptq_int4:
            return launch_format<NT, QuantFormat::gptq_int4>(p, stream);
        case QuantFormat::fp8_e4m3:
            return launch_format<NT, QuantFormat::fp8_e4m3>(p, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace

QuantMmaSplit quant_mma_split(int n, int k, int split_chunk, int n_tokens, int col_groups) {
    int rows = split_chunk;
    if (rows <= 0) {
        const int chunks = (k + 31) / 32, warps_per_split = (n + 63) / 64 * (kWarps / col_groups);
        const int splits =
            std::clamp(kTargetWarps / std::max(warps_per_split, 1), 1, std::max(1, chunks / (kWarps / col_groups)));
        rows = std::min((chunks + splits - 1) / splits * 32, max_block_rows(n_tokens));
    }
    return {rows, (k + rows - 1) / rows};
}

std::size_t quant_mma_workspace_bytes(int n, int k, int split_chunk) {
    int most = 0;  // the largest splits x tokens any launch may use
    for (int tokens = 8; tokens <= kQuantMmaMaxTokens; tokens += 8)
        for (int cg : {1, 2, 4}) most = std::max(most, quant_mma_split(n, k, split_chunk, tokens, cg).splits * tokens);
    return kQuantGemvCounterBytes + std::size_t(most) * std::size_t(n) * 4;
}

bool quant_mma_supported(const QuantGemvParams& p) {
    if (p.g_idx || p.k_order || p.lora_token0 < 0) return false;
    if (p.lora_expand && (p.lora.n_slices < 1 || p.lora.n_slices > kMaxLoraSlices || !p.lora.xa)) return false;
    if (p.lora_shrink && !shrink_supported(p)) return false;
    if ((p.lora_expand || p.lora_shrink || p.x_before_wait) && p.n_tokens > kQuantMmaMaxLoraTokens) return false;
    if (p.n_tokens < 1 || p.n_tokens > kQuantMmaMaxTokens || p.n <= 0 || p.n > kQuantMmaMaxColumns || p.k <= 0 ||
        !p.x || !p.y || !p.workspace)
        return false;
    if (p.x_row_stride < p.k || p.x_row_stride % 8 || p.y_row_stride < p.n || p.y_row_stride % 2) return false;
    if (p.split_chunk < 0 || p.split_chunk % 32 || p.split_chunk > max_block_rows(p.n_tokens)) return false;
    if (p.mma_col_groups != 0 && p.mma_col_groups != 1 && p.mma_col_groups != 2 && p.mma_col_groups != 4) return false;
    if (p.n % 8 || p.k % 32 || !aligned16(p.x) || !aligned16(p.workspace) || (reinterpret_cast<uintptr_t>(p.y) & 3u) ||
        (p.bias && (reinterpret_cast<uintptr_t>(p.bias) & 3u)))
        return false;
    if (p.format == QuantFormat::fp8_e4m3)
        return p.w_fp8 && p.w_scale && (reinterpret_cast<uintptr_t>(p.w_fp8) & 7u) == 0;
    const int G = p.group_size;
    return G > 0 && G % 32 == 0 && p.qweight && p.qzeros && p.scales && aligned16(p.qweight) && aligned16(p.scales);
}

cudaError_t quant_mma(const QuantGemvParams& p, cudaStream_t stream) {
    if (!quant_mma_supported(p)) return cudaErrorInvalidValue;
    switch ((p.n_tokens + 7) / 8) {
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
