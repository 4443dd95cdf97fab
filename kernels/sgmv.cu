// SGMV LoRA kernels over adapter segments (Punica-style shrink/expand), built for decode batches where the
// work is a few MB spread over many adapters and latency, not bandwidth, is the enemy. Shrink: one block per
// (segment chunk of 1 or 4 tokens, 4 rank rows, slice); all 256 threads split the input dimension so every
// lane keeps 15-16 16-byte loads in flight, then a warp reduce-scatter + shared-memory sum. Expand: one block
// per (segment chunk, 2048 output columns of one slice); each thread owns 8 columns, loads 16 B^T rows at once.
// Grids depend only on (n_segs, max_seg_len, n_slices, max_rank, out sizes): CUDA graphs bake them. Both load their
// first weights (A; B^T's first 16 rows) before the PDL wait, from the step's metadata and the slots, which no kernel
// of the step writes: the round trip overlaps the kernel before them (H200, Qwen3-8B 32 requests on 32 rank-16
// adapters: 7.45 -> 7.13 ms per step). sgmv_expand_swiglu is the expand of a gate|up site with the SwiGLU as its
// epilogue: it writes the activation instead of y (7.12 -> 6.92 ms per step at 32 on 32).
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "launch_pdl.cuh"
#include "launchers.h"
#include "swiglu.cuh"

namespace loradesk::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kShrinkRows = 4;     // rank rows per shrink block: rank 16 = 4 live blocks per (chunk, slice)
constexpr int kExpandRChunk = 16;  // B^T rows loaded at once by the expand: rank 16 = one round trip

// W bf16 elements loaded as one unit: 8 (16-byte vector path) or 1 (any alignment).
template <int W>
struct Pack;
template <>
struct Pack<8> {
    uint4 u{0u, 0u, 0u, 0u};
};
template <>
struct Pack<1> {
    unsigned short u = 0;
};

__device__ __forceinline__ Pack<8> load_ro(const uint16_t* p, Pack<8>) {
    return {__ldg(reinterpret_cast<const uint4*>(p))};
}
__device__ __forceinline__ Pack<1> load_ro(const uint16_t* p, Pack<1>) {
    return {__ldg(reinterpret_cast<const unsigned short*>(p))};
}
template <int W>
__device__ __forceinline__ Pack<W> load_ro(const uint16_t* p) {
    return load_ro(p, Pack<W>{});
}

__device__ __forceinline__ float bf16_bits(uint32_t h) { return __uint_as_float(h << 16); }

// Element e (compile-time after unrolling) of a pack, as f32: bf16 -> f32 is a 16-bit shift.
__device__ __forceinline__ float elem(const Pack<8>& p, int e) {
    const uint32_t w = e < 2 ? p.u.x : e < 4 ? p.u.y : e < 6 ? p.u.z : p.u.w;
    return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
__device__ __forceinline__ float elem(const Pack<1>& p, int) { return bf16_bits(p.u); }

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low half
    return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ Pack<8> to_pack(const float (&f)[8]) {
    return {make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]))};
}
__device__ __forceinline__ Pack<1> to_pack(const float (&f)[1]) {
    __nv_bfloat16 v = __float2bfloat16_rn(f[0]);
    return {*reinterpret_cast<unsigned short*>(&v)};
}

// Butterfly reduce-scatter of kV per-lane values over the warp (kV a power of two <= 32): afterwards lane l
// holds the warp-wide sum of value (l & (kV - 1)). 31 shuffles for 32 values instead of 160 for all-reduces.
template <int kO, int kV>
__device__ __forceinline__ void scatter_steps(float (&v)[kV], int lane) {
    if constexpr (kO >= 1) {
        const bool upper = (lane & kO) != 0;
#pragma unroll
        for (int i = 0; i < kO; ++i) {
            const float send = upper ? v[i] : v[i + kO];
            const float keep = upper ? v[i + kO] : v[i];
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kO);
        }
        scatter_steps<kO / 2, kV>(v, lane);
    }
}
template <int kV>
__device__ __forceinline__ float warp_reduce_scatter(float (&v)[kV], int lane) {
    static_assert(kV >= 1 && kV <= 32 && (kV & (kV - 1)) == 0, "kV must be a power of two <= 32");
#pragma unroll
    for (int o = 16; o >= kV; o >>= 1)  // lane bits above the value index: plain all-reduce
#pragma unroll
        for (int i = 0; i < kV; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    scatter_steps<kV / 2, kV>(v, lane);
    return v[0];
}

// kU input units (unit u + k*kThreads, W elements each; u itself is in range) of every row of A. All loads are
// unconditional so the iteration's loads are all in flight at once instead of one branch-guarded load after
// another: rows past the end re-read the last valid one, units past the end re-read unit u (shrink_step zeroes
// them after the load).
template <int W, int kU>
__device__ __forceinline__ void load_a(Pack<W> (&av)[kU][kShrinkRows], const uint16_t* a, int64_t a_pitch, int n_rows,
                                       int u, int n_units) {
#pragma unroll
    for (int k = 0; k < kU; ++k) {
        const int off = (u + k * kThreads < n_units ? u + k * kThreads : u) * W;
#pragma unroll
        for (int row = 0; row < kShrinkRows; ++row)
            av[k][row] = load_ro<W>(a + int64_t(min(row, n_rows - 1)) * a_pitch + off);
    }
}

// The same kU units of every token of x (tokens past the end re-read the last valid one, never written), times av
// (load_a's), into acc.
template <int kTok, int W, int kU>
__device__ __forceinline__ void shrink_step(float (&acc)[kShrinkRows][kTok], const Pack<W> (&av)[kU][kShrinkRows],
                                            const uint16_t* x, int64_t x_pitch, int n_tok, int u, int n_units) {
    Pack<W> xv[kU][kTok];
#pragma unroll
    for (int k = 0; k < kU; ++k) {
        const int off = (u + k * kThreads < n_units ? u + k * kThreads : u) * W;
#pragma unroll
        for (int tt = 0; tt < kTok; ++tt) xv[k][tt] = load_ro<W>(x + int64_t(min(tt, n_tok - 1)) * x_pitch + off);
    }
#pragma unroll
    for (int k = 0; k < kU; ++k) {
        const bool live = u + k * kThreads < n_units;
#pragma unroll
        for (int e = 0; e < W; ++e) {
            float xf[kTok];
#pragma unroll
            for (int tt = 0; tt < kTok; ++tt) xf[tt] = live ? elem(xv[k][tt], e) : 0.0f;
#pragma unroll
            for (int row = 0; row < kShrinkRows; ++row) {
                const float af = live ? elem(av[k][row], e) : 0.0f;
#pragma unroll
                for (int tt = 0; tt < kTok; ++tt) acc[row][tt] = fmaf(af, xf[tt], acc[row][tt]);
            }
        }
    }
}

// What a shrink block (chunk of segment seg, rank rows [r0, r0 + kShrinkRows), slice j) works on. It comes from the
// step's metadata and the slots only, which no kernel of the step writes: known before the PDL wait.
struct ShrinkBlock {
    bool live = false;            // a slot with rank rows here and tokens in the chunk
    const uint16_t* a = nullptr;  // row r0 of slice j's A in the slot
    int t0 = 0, n_tok = 0, n_rows = 0;
};

template <int kTok>
__device__ __forceinline__ ShrinkBlock shrink_block(const SgmvParams& p, int n_chunks, int r0, int j) {
    ShrinkBlock b;
    const int seg = blockIdx.x / n_chunks, chunk = blockIdx.x - seg * n_chunks;
    const int slot = p.seg_slot[seg];
    if (slot <= 0) return b;
    const LoraSlice& sl = p.slices[j];
    const int rank = min(sl.ranks[slot], p.max_rank);
    if (r0 >= rank) return b;  // rows past this slot's rank: most of the grid when max_rank >> rank, gone at once
    b.t0 = p.seg_indptr[seg] + chunk * kTok;
    b.n_tok = min(kTok, p.seg_indptr[seg + 1] - b.t0);
    b.n_rows = min(kShrinkRows, rank - r0);
    b.a = sl.a + int64_t(slot - 1) * p.slot_stride + int64_t(r0) * p.in_features;
    b.live = b.n_tok > 0;
    return b;
}

// Block (chunk of segment seg, rank rows [r0, r0 + kRows), slice blockIdx.z): xa[t, j*max_rank + r] = x[t].A[r].
// A is weights, never a predecessor's output: the block's first loads of it are in flight before the PDL wait, so
// their DRAM round trip overlaps the kernel that writes x (the norm before q|k|v or gate|up, the attention before o).
// Every block waits, live or not, so that the grid's end still implies its predecessor's.
template <int kTok, int W>
__global__ void __launch_bounds__(kThreads) sgmv_shrink_kernel(const __grid_constant__ SgmvParams p, int n_chunks) {
    constexpr int kRows = kShrinkRows, kV = kRows * kTok;
    constexpr int kU = kTok == 1 ? 3 : 2;  // loads in flight per lane: 12 + 3, or 8 + 8 (4096 = one iteration)
    const int j = blockIdx.z, r0 = blockIdx.y * kRows, in = p.in_features, n_units = in / W, u0 = threadIdx.x;
    const ShrinkBlock b = shrink_block<kTok>(p, n_chunks, r0, j);
    Pack<W> av[kU][kRows];
    if (b.live && u0 < n_units) load_a<W, kU>(av, b.a, in, b.n_rows, u0, n_units);
    detail::pdl_wait();
    if (!b.live) return;
    const int t0 = b.t0, n_tok = b.n_tok, n_rows = b.n_rows;
    const uint16_t* x = p.x + int64_t(t0) * p.x_row_stride;

    float acc[kRows][kTok] = {};
    for (int u = u0; u < n_units; u += kThreads * kU) {
        if (u != u0) load_a<W, kU>(av, b.a, in, n_rows, u, n_units);
        shrink_step<kTok, W, kU>(acc, av, x, p.x_row_stride, n_tok, u, n_units);
    }

    float v[kV];
#pragma unroll
    for (int row = 0; row < kRows; ++row)
#pragma unroll
        for (int tt = 0; tt < kTok; ++tt) v[row * kTok + tt] = acc[row][tt];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float s = warp_reduce_scatter<kV>(v, lane);
    __shared__ float red[kWarps][kV];
    if (lane < kV) red[warp][lane] = s;
    __syncthreads();
    if (threadIdx.x < kV) {
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) sum += red[w][threadIdx.x];
        const int row = threadIdx.x / kTok, tt = threadIdx.x - row * kTok;
        if (row < n_rows && tt < n_tok)
            p.xa[int64_t(t0 + tt) * p.n_slices * p.max_rank + j * p.max_rank + r0 + row] = sum;
    }
}

// Column blocks of the expand grid's y dimension: slice j owns blocks [begin[j], begin[j + 1]), each of
// kThreads * W columns, W = 8 where slice j's B^T and y columns allow 16-byte access (bit j of vec8).
struct ExpandMap {
    int begin[kMaxLoraSlices + 1] = {};
    unsigned vec8 = 0;
};

// W f32 values of a delta row (SgmvParams::delta), as 16-byte stores where W = 8.
template <int W>
__device__ __forceinline__ void store_delta(float* dst, const float (&f)[W]) {
    if constexpr (W == 8) {
        reinterpret_cast<float4*>(dst)[0] = make_float4(f[0], f[1], f[2], f[3]);
        reinterpret_cast<float4*>(dst)[1] = make_float4(f[4], f[5], f[6], f[7]);
    } else {
        dst[0] = f[0];
    }
}

// The delta expand's thread for a token range or slice without an adapter: its columns of delta are zero.
template <int kTok, int W>
__device__ __forceinline__ void zero_delta_columns(const SgmvParams& p, const LoraSlice& sl, int cb, int t0,
                                                   int n_tok) {
    const int col = (cb * kThreads + int(threadIdx.x)) * W;
    if (col >= sl.out_features) return;
    const float zero[W] = {};
    for (int tt = 0; tt < n_tok; ++tt)
        store_delta<W>(p.delta + int64_t(t0 + tt) * p.y_row_stride + sl.out_offset + col, zero);
}

// kExpandRChunk rows of B^T from row r0 at this thread's columns (bt), unconditional so that all are in flight: rows
// past the rank re-read row rank-1 (expand_columns weighs them by zero).
template <int W>
__device__ __forceinline__ void load_bt(Pack<W> (&b)[kExpandRChunk], const uint16_t* bt, int out, int r0, int rank) {
#pragma unroll
    for (int i = 0; i < kExpandRChunk; ++i) b[i] = load_ro<W>(bt + int64_t(min(r0 + i, rank - 1)) * out);
}

// d[t][e] += sum_r xa_s[t][r] * Bt[r, col + e] over the rank, one chunk of kExpandRChunk rows of B^T at a time, r in
// order (the expand kernels and their reference twins agree on it); b holds the first chunk when first_loaded.
template <int kTok, int W>
__device__ __forceinline__ void expand_dot(float (&d)[kTok][W], const uint16_t* bt, int out, int rank,
                                           const float* xa_s, int xa_pitch, Pack<W> (&b)[kExpandRChunk],
                                           bool first_loaded) {
    for (int r0 = 0; r0 < rank; r0 += kExpandRChunk) {
        if (r0 > 0 || !first_loaded) load_bt<W>(b, bt, out, r0, rank);
#pragma unroll
        for (int i = 0; i < kExpandRChunk; ++i) {
            float xs[kTok];  // zero past the rank: the clamped re-read of row rank-1 adds nothing
#pragma unroll
            for (int tt = 0; tt < kTok; ++tt) xs[tt] = xa_s[tt * xa_pitch + r0 + i];
#pragma unroll
            for (int e = 0; e < W; ++e) {
                const float bf = elem(b[i], e);
#pragma unroll
                for (int tt = 0; tt < kTok; ++tt) d[tt][e] = fmaf(xs[tt], bf, d[tt][e]);
            }
        }
    }
}

// One thread, W adjacent columns of slice j: y[t, off + col..] += scale * sum_r xa_s[t][r] * Bt[r, col..], or with
// kDelta that term into delta (y untouched). The product and the sum are rounded apart (no FMA), so that a reader
// adding the delta later gets the same bits as this sum. b: B^T's first chunk at this thread's columns when
// first_loaded (loaded before the PDL wait), else scratch.
template <int kTok, int W, bool kDelta>
__device__ __forceinline__ void expand_columns(const SgmvParams& p, const LoraSlice& sl, int slot, int rank, int cb,
                                               int t0, int n_tok, const float* xa_s, int xa_pitch,
                                               Pack<W> (&b)[kExpandRChunk], bool first_loaded) {
    const int col = (cb * kThreads + int(threadIdx.x)) * W;
    if (col >= sl.out_features) return;
    const int out = sl.out_features;
    const uint16_t* bt = sl.bt + int64_t(slot - 1) * p.slot_stride + col;
    uint16_t* y = kDelta ? nullptr : p.y + int64_t(t0) * p.y_row_stride + sl.out_offset + col;
    Pack<W> yv[kTok];  // y read up front (tokens past the end re-read the last) to overlap the B^T loads
    if constexpr (!kDelta)
#pragma unroll
        for (int tt = 0; tt < kTok; ++tt)
            yv[tt] = *reinterpret_cast<const Pack<W>*>(y + int64_t(min(tt, n_tok - 1)) * p.y_row_stride);
    float d[kTok][W] = {};
    expand_dot<kTok, W>(d, bt, out, rank, xa_s, xa_pitch, b, first_loaded);
    const float scale = sl.scales[slot];
#pragma unroll
    for (int tt = 0; tt < kTok; ++tt) {
        if (tt >= n_tok) break;
        float f[W];
        if constexpr (kDelta) {
#pragma unroll
            for (int e = 0; e < W; ++e) f[e] = __fmul_rn(scale, d[tt][e]);
            store_delta<W>(p.delta + int64_t(t0 + tt) * p.y_row_stride + sl.out_offset + col, f);
        } else {
#pragma unroll
            for (int e = 0; e < W; ++e) f[e] = __fadd_rn(elem(yv[tt], e), __fmul_rn(scale, d[tt][e]));
            *reinterpret_cast<Pack<W>*>(y + int64_t(tt) * p.y_row_stride) = to_pack(f);
        }
    }
}

// As the shrink, the expand requests its first chunk of B^T (weights) before the PDL wait, on the 16-byte path: the
// round trip overlaps the shrink it follows; then only xa (in L2) stands between the shrink's end and the FMAs.
template <int kTok, bool kDelta>
__global__ void __launch_bounds__(kThreads)
    sgmv_expand_kernel(const __grid_constant__ SgmvParams p, int n_chunks, const ExpandMap m) {
    extern __shared__ float xa_s[];  // [kTok][xa_pitch]: this chunk's xa of slice j, zero past the rank
    const int seg = blockIdx.x / n_chunks, chunk = blockIdx.x - seg * n_chunks;
    const int slot = p.seg_slot[seg];
    int j = 0;
    while (j + 1 < p.n_slices && int(blockIdx.y) >= m.begin[j + 1]) ++j;
    const LoraSlice& sl = p.slices[j];
    const int t0 = p.seg_indptr[seg] + chunk * kTok;
    const int n_tok = min(kTok, p.seg_indptr[seg + 1] - t0);
    const int cb = int(blockIdx.y) - m.begin[j];
    // Without an adapter on this slice y stays bit-identical, and a delta is zero.
    const int rank = slot <= 0 || n_tok <= 0 ? 0 : min(sl.ranks[slot], p.max_rank);
    const bool vec8 = (m.vec8 & (1u << j)) != 0;
    Pack<8> b8[kExpandRChunk];
    const int col8 = (cb * kThreads + int(threadIdx.x)) * 8;
    const bool preloaded = rank > 0 && vec8 && col8 < sl.out_features;
    if (preloaded) load_bt<8>(b8, sl.bt + int64_t(slot - 1) * p.slot_stride + col8, sl.out_features, 0, rank);
    detail::pdl_wait();
    if (n_tok <= 0) return;
    if (rank <= 0) {
        if constexpr (kDelta) {
            if (vec8)
                zero_delta_columns<kTok, 8>(p, sl, cb, t0, n_tok);
            else
                zero_delta_columns<kTok, 1>(p, sl, cb, t0, n_tok);
        }
        return;
    }
    const int xa_pitch = (rank + kExpandRChunk - 1) / kExpandRChunk * kExpandRChunk;
    const int64_t xa_row = int64_t(p.n_slices) * p.max_rank;
    for (int i = threadIdx.x; i < kTok * xa_pitch; i += kThreads) {
        const int tt = i / xa_pitch, r = i - tt * xa_pitch;
        // Only the slot's real rank was written by the shrink; never read the rest.
        xa_s[i] = tt < n_tok && r < rank ? p.xa[int64_t(t0 + tt) * xa_row + j * p.max_rank + r] : 0.0f;
    }
    __syncthreads();
    if (vec8) {
        expand_columns<kTok, 8, kDelta>(p, sl, slot, rank, cb, t0, n_tok, xa_s, xa_pitch, b8, preloaded);
    } else {
        Pack<1> b1[kExpandRChunk];
        expand_columns<kTok, 1, kDelta>(p, sl, slot, rank, cb, t0, n_tok, xa_s, xa_pitch, b1, false);
    }
}

// One slice (gate or up) of sgmv_expand_swiglu at a thread's W columns, as sgmv_expand would leave y there:
// bf16(y + scale * delta) with the product and the sum rounded apart, y itself without an adapter. Into v, as f32.
template <int kTok, int W>
__device__ __forceinline__ void swiglu_slice(const SgmvParams& p, const LoraSlice& sl, int slot, int rank, int col,
                                             int t0, int n_tok, const float* xa_s, int xa_pitch,
                                             Pack<W> (&b)[kExpandRChunk], bool first_loaded, float (&v)[kTok][W]) {
    const uint16_t* y = p.y + int64_t(t0) * p.y_row_stride + sl.out_offset + col;
    Pack<W> yv[kTok];  // tokens past the end re-read the last
#pragma unroll
    for (int tt = 0; tt < kTok; ++tt)
        yv[tt] = *reinterpret_cast<const Pack<W>*>(y + int64_t(min(tt, n_tok - 1)) * p.y_row_stride);
    float d[kTok][W] = {};
    if (rank > 0)
        expand_dot<kTok, W>(d, sl.bt + int64_t(slot - 1) * p.slot_stride + col, sl.out_features, rank, xa_s, xa_pitch,
                            b, first_loaded);
    const float scale = rank > 0 ? sl.scales[slot] : 0.0f;
#pragma unroll
    for (int tt = 0; tt < kTok; ++tt)
#pragma unroll
        for (int e = 0; e < W; ++e)
            v[tt][e] =
                rank > 0 ? __bfloat162float(__float2bfloat16_rn(__fadd_rn(elem(yv[tt], e), __fmul_rn(scale, d[tt][e]))))
                         : elem(yv[tt], e);
}

// gate|up's expand with the SwiGLU as its epilogue: block (segment chunk, kThreads * W columns of each of the two
// slices); act[t, c] = swiglu(gate, up) of the values sgmv_expand would have left in y, rounded once, y untouched.
// One launch after the gate|up GEMM instead of an expand (beside it or after it) and silu_mul: B^T and y read once,
// no f32 delta. As sgmv_expand, gate's first chunk of B^T is requested before the PDL wait.
template <int kTok, int W>
__global__ void __launch_bounds__(kThreads)
    sgmv_expand_swiglu_kernel(const __grid_constant__ SgmvParams p, int n_chunks, uint16_t* act) {
    extern __shared__ float xa_s[];  // [2][kTok][xa_pitch]: this chunk's xa of gate, then of up, zero past the rank
    const int seg = blockIdx.x / n_chunks, chunk = blockIdx.x - seg * n_chunks;
    const int slot = p.seg_slot[seg];
    const int t0 = p.seg_indptr[seg] + chunk * kTok;
    const int n_tok = min(kTok, p.seg_indptr[seg + 1] - t0);
    const int inter = p.slices[0].out_features, col = (int(blockIdx.y) * kThreads + int(threadIdx.x)) * W;
    int rank[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) rank[j] = slot <= 0 || n_tok <= 0 ? 0 : min(p.slices[j].ranks[slot], p.max_rank);
    Pack<W> b[kExpandRChunk];
    const bool preloaded = rank[0] > 0 && col < inter;
    if (preloaded) load_bt<W>(b, p.slices[0].bt + int64_t(slot - 1) * p.slot_stride + col, inter, 0, rank[0]);
    detail::pdl_wait();
    if (n_tok <= 0) return;
    const int xa_pitch = (max(rank[0], rank[1]) + kExpandRChunk - 1) / kExpandRChunk * kExpandRChunk;
    const int64_t xa_row = int64_t(p.n_slices) * p.max_rank;
    for (int i = threadIdx.x; i < 2 * kTok * xa_pitch; i += kThreads) {
        const int j = i / (kTok * xa_pitch), rest = i - j * kTok * xa_pitch, tt = rest / xa_pitch;
        const int r = rest - tt * xa_pitch;
        xa_s[i] = tt < n_tok && r < rank[j] ? p.xa[int64_t(t0 + tt) * xa_row + j * p.max_rank + r] : 0.0f;
    }
    __syncthreads();
    if (col >= inter) return;
    float g[kTok][W], u[kTok][W];
    swiglu_slice<kTok, W>(p, p.slices[0], slot, rank[0], col, t0, n_tok, xa_s, xa_pitch, b, preloaded, g);
    swiglu_slice<kTok, W>(p, p.slices[1], slot, rank[1], col, t0, n_tok, xa_s + kTok * xa_pitch, xa_pitch, b, false, u);
#pragma unroll
    for (int tt = 0; tt < kTok; ++tt) {
        if (tt >= n_tok) break;
        float f[W];
#pragma unroll
        for (int e = 0; e < W; ++e) f[e] = detail::swiglu(g[tt][e], u[tt][e]);
        *reinterpret_cast<Pack<W>*>(act + int64_t(t0 + tt) * inter + col) = to_pack(f);
    }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

cudaError_t check(const SgmvParams& p) {
    if (p.n_slices < 1 || p.n_slices > kMaxLoraSlices || p.max_rank <= 0 || p.n_segs < 0 || p.max_seg_len < 0)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

// Tokens per block: 1 when every segment is a single token (eager decode over distinct adapters), else 4
// (the graph path's segment cap; long prefill segments become chunks of 4 that re-read A / B^T from L2).
int tokens_per_block(const SgmvParams& p) { return p.max_seg_len == 1 ? 1 : 4; }

template <int kTok>
cudaError_t launch_shrink(const SgmvParams& p, bool vec8, cudaStream_t stream) {
    const int n_chunks = (p.max_seg_len + kTok - 1) / kTok;
    const int64_t gx = int64_t(p.n_segs) * n_chunks, gy = (p.max_rank + kShrinkRows - 1) / kShrinkRows;
    if (gx > INT_MAX || gy > 65535) return cudaErrorInvalidValue;
    dim3 grid(unsigned(gx), unsigned(gy), unsigned(p.n_slices));
    return vec8 ? detail::launch(sgmv_shrink_kernel<kTok, 8>, grid, kThreads, 0, stream, p, n_chunks)
                : detail::launch(sgmv_shrink_kernel<kTok, 1>, grid, kThreads, 0, stream, p, n_chunks);
}

template <int kTok>
cudaError_t launch_expand(const SgmvParams& p, const ExpandMap& m, cudaStream_t stream) {
    const int n_chunks = (p.max_seg_len + kTok - 1) / kTok;
    const int64_t gx = int64_t(p.n_segs) * n_chunks, gy = m.begin[p.n_slices];
    if (gy == 0) return cudaSuccess;
    const size_t smem = sizeof(float) * kTok * ((p.max_rank + kExpandRChunk - 1) / kExpandRChunk * kExpandRChunk);
    if (gx > INT_MAX || gy > 65535 || smem > 48 * 1024) return cudaErrorInvalidValue;  // max_rank > 3072
    const dim3 grid{unsigned(gx), unsigned(gy)};
    return p.delta ? detail::launch(sgmv_expand_kernel<kTok, true>, grid, kThreads, smem, stream, p, n_chunks, m)
                   : detail::launch(sgmv_expand_kernel<kTok, false>, grid, kThreads, smem, stream, p, n_chunks, m);
}

}  // namespace

cudaError_t sgmv_shrink(const SgmvParams& p, cudaStream_t stream) {
    if (cudaError_t e = check(p); e != cudaSuccess) return e;
    if (p.n_segs == 0 || p.max_seg_len == 0) return cudaSuccess;
    bool vec8 = p.in_features % 8 == 0 && p.x_row_stride % 8 == 0 && p.slot_stride % 8 == 0 && aligned16(p.x);
    for (int j = 0; j < p.n_slices; ++j) vec8 = vec8 && aligned16(p.slices[j].a);
    return tokens_per_block(p) == 1 ? launch_shrink<1>(p, vec8, stream) : launch_shrink<4>(p, vec8, stream);
}

cudaError_t sgmv_expand_swiglu(const SgmvParams& p, uint16_t* act, cudaStream_t stream) {
    if (cudaError_t e = check(p); e != cudaSuccess) return e;
    const LoraSlice &gate = p.slices[0], &up = p.slices[1];
    const int inter = gate.out_features;
    if (!act || p.delta || p.n_slices != 2 || inter <= 0 || up.out_features != inter || gate.out_offset != 0 ||
        up.out_offset != inter || p.y_row_stride != 2 * int64_t(inter))
        return cudaErrorInvalidValue;
    if (p.n_segs == 0 || p.max_seg_len == 0) return cudaSuccess;
    const bool vec8 = inter % 8 == 0 && p.slot_stride % 8 == 0 && aligned16(p.y) && aligned16(act) &&
                      aligned16(gate.bt) && aligned16(up.bt);
    const int kTok = tokens_per_block(p), n_chunks = (p.max_seg_len + kTok - 1) / kTok,
              cols = kThreads * (vec8 ? 8 : 1);
    const int64_t gx = int64_t(p.n_segs) * n_chunks, gy = (inter + cols - 1) / cols;
    const size_t smem = sizeof(float) * 2 * kTok * ((p.max_rank + kExpandRChunk - 1) / kExpandRChunk * kExpandRChunk);
    if (gx > INT_MAX || gy > 65535 || smem > 48 * 1024) return cudaErrorInvalidValue;
    const dim3 grid{unsigned(gx), unsigned(gy)};
    auto launch = [&](auto kernel) { return detail::launch(kernel, grid, kThreads, smem, stream, p, n_chunks, act); };
    if (kTok == 1) return vec8 ? launch(sgmv_expand_swiglu_kernel<1, 8>) : launch(sgmv_expand_swiglu_kernel<1, 1>);
    return vec8 ? launch(sgmv_expand_swiglu_kernel<4, 8>) : launch(sgmv_expand_swiglu_kernel<4, 1>);
}

cudaError_t sgmv_expand(const SgmvParams& p, cudaStream_t stream) {
    if (cudaError_t e = check(p); e != cudaSuccess) return e;
    if (p.n_segs == 0 || p.max_seg_len == 0) return cudaSuccess;
    ExpandMap m;
    for (int j = 0; j < p.n_slices; ++j) {
        const LoraSlice& sl = p.slices[j];
        if (sl.out_features < 0) return cudaErrorInvalidValue;
        const void* out = p.delta ? static_cast<const void*>(p.delta) : p.y;
        const bool vec8 = sl.out_features % 8 == 0 && sl.out_offset % 8 == 0 && p.y_row_stride % 8 == 0 &&
                          p.slot_stride % 8 == 0 && aligned16(out) && aligned16(sl.bt);
        const int cols = kThreads * (vec8 ? 8 : 1);
        m.vec8 |= vec8 ? 1u << j : 0u;
        m.begin[j + 1] = m.begin[j] + (sl.out_features + cols - 1) / cols;
    }
    return tokens_per_block(p) == 1 ? launch_expand<1>(p, m, stream) : launch_expand<4>(p, m, stream);
}

}  // namespace loradesk::kernels
