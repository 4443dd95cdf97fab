// Decode-specialised paged attention (issue #8): same AttentionParams, plan and f32 partial layout as
// attention() in attention.cu, followed by the same merge kernel. A block takes one work item of one KV head
// and all query rows of its tile (the GQA group of the one new token); its 4 warps walk interleaved 32-key
// sub-tiles where each lane owns a key for Q·K (16-byte K loads, page resolved once per key) and head_dim/32
// columns for P·V (coalesced V rows), with an online softmax per warp; the warps' (m, l, acc) are merged
// through shared memory before the partial is written. head_dim 64/128/256, group <= 16.
// At head_dim 128 with up to 4 query rows (Qwen3, Llama, Mistral), Q·K reads K coalesced instead: a half-warp
// reads whole K rows with q's columns in registers, and a reduce-scatter hands each lane its key's score.
// With AttentionParams::merge_counters, split items need no merge launch: the last block of each group to
// finish (an atomic count per group and KV head) merges the group's partials in item order and writes the
// output, so the result does not depend on which block finishes last.
// Where the grid holds at most one block per SM (batch 1-4 at Qwen3 shapes), each warp's first 32 keys are staged in
// shared memory before the PDL wait and walked on tensor cores (staged_subtile_mma); the planner keeps such splits
// within those sub-tiles (step_plan.cpp), so the walk after the wait reads only shared memory. Where the grid is
// larger, 2-8 query rows per KV head walk every sub-tile that way, copied in by cp.async after the wait (kMmaWalk).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "attention_decode_subtile.cuh"
#include "attention_internal.h"
#include "launch_pdl.cuh"
#include "launchers.h"
#include "mma_bf16.cuh"
#include "rope_head.cuh"

namespace loradesk::kernels {
namespace {

using namespace detail;  // the sub-tile primitives of attention_decode_subtile.cuh

// Warps per block: 4 when the plan splits keys over many blocks (partials + merge kernel); 8 when every item
// holds a whole sequence (no split: short contexts), so that one block walks up to ~1,000 keys in a few
// sub-tiles per warp and writes the output itself — no workspace round trip, no merge launch.
// Whole-sequence launches of one query row per KV head (MHA) take 4-warp blocks too where that means fewer waves x
// sub-tile rounds (whole_in_split_blocks): a block ends when its busiest warp does, and a sequence of 528-592 keys is
// 17-19 sub-tiles, so 8 warps idle through most of a third round where 4 lose at most a fifth of the last one.
constexpr int kSplitWarps = 4;
constexpr int kWholeWarps = 8;

// Blocks per SM the unstaged one-row kernels are compiled for (__launch_bounds__ min blocks): 24 warps instead of the
// 16 / 20 their 100-104 / 96 registers allowed. They stream K and V with a few loads in flight per warp, so the warps
// resident are what keeps DRAM busy (Llama-7B batch 128 on the H200, with the 4-warp whole-sequence blocks: 16.9 ->
// 14.9 ms per step). ptxas then spills 12-28 bytes in some of them (the RoPE prologue's and the walk's bookkeeping).
// The bound pays even where the grid fits one wave of the unbounded kernels (the same blocks per SM either way):
// batch 8 x 4,000 keys (256 blocks of 8 warps) 8.36 against 8.94 ms per step unbounded, batch 16 x 2,048 (512 of 4)
// 8.63 against 9.21; only batch 1 x 4,000 (16 splits, 512 blocks of 4) went the other way, 4.77 against 4.72.
// Staged kernels run one block per SM by design; several query rows hold too many accumulators to bound. The walk
// on tensor cores (Mw) is bound to 3 blocks per SM up to 4 rows (its K and V arrive by cp.async, 16 KB per warp in
// flight), 2 beyond (8 rows of accumulators, twice: the walk's and a sub-tile's).
template <int HD, int R, int W, bool St, bool Mw = false>
constexpr int kMinBlocks = Mw                    ? (R <= 4 ? 3 : 2)
                           : St                  ? 1
                           : R == 1 && HD <= 128 ? (W == kWholeWarps ? kDecodeDenseBlocks8 : kDecodeDenseBlocks4)
                                                 : 0;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kMergeChunk = 8;  // partials the fused merge loads at once

// Shared memory of a W-warp block: q [R][HD] and per-warp P [W][32][R] (floats) while walking keys;
// afterwards the warps' m [W][R], l [W][R] and acc [W][R][HD] for the block merge, over the same bytes.
template <int HD, int R, int W>
__host__ __device__ constexpr int decode_walk_bytes() {
    return 4 * (R * HD + W * kKeys * R);
}
template <int HD, int R, int W>
__host__ __device__ constexpr int decode_merge_bytes() {
    return 4 * W * R * (HD + 2);
}

// The staged K and V rows of every warp's sub-tile, [W][K, V][32][HD] bf16 (16 KB per warp at head_dim 128).
template <int HD, int W>
constexpr int kStagingBytes = W * 2 * kKeys* HD * 2;

// The staged sub-tile's other tensor-core operands (St): q unscaled in bf16, [8][kQbStride] (rows past the group
// zero), then per warp P in bf16, [8][kPStride] (both padded so that ldmatrix's 8 rows fall on distinct banks). The
// warp's O^T, on its way into the walk state, goes through the warp's K buffer, which Q·K is done with by then.
constexpr int kStagedWarpExtra = 8 * kPStride * 2;

// What precedes the staging buffers: the walk's buffers and, unstaged, the merge's. A staged block merges over the
// walk's buffers and the staging buffers after them (block_merge_write waits for every warp's walk first), so its
// merge needs no bytes of its own. With them, the tensor-core walk's 4-warp blocks of 4 rows took 86.8 KB, which
// let 2 blocks share an SM where their registers allow 3 (Nsight Compute, H200, twenty-fourth session).
template <int HD, int R, int W, bool St>
__host__ __device__ constexpr int decode_head_bytes() {
    constexpr int walk = decode_walk_bytes<HD, R, W>(), merge = decode_merge_bytes<HD, R, W>();
    static_assert(!St || merge <= walk + kStagingBytes<HD, W>, "the staged merge fits the walk and staging bytes");
    return ((St || walk > merge ? walk : merge) + 15) / 16 * 16;
}

// The kernel's whole dynamic shared memory: those buffers, then (St) the staging buffers, q in bf16 and each warp's P.
template <int HD, int R, int W, bool St>
__host__ __device__ constexpr int decode_kernel_smem() {
    return decode_head_bytes<HD, R, W, St>() +
           (St ? kStagingBytes<HD, W> + 8 * kQbStride * 2 + W * kStagedWarpExtra : 0);
}

// Own: this block wrote the K and V rows of key `own` itself (the RoPE-fused kernel's fresh key), so they are read
// through L2. With one query row only the sub-tile that holds that key is; every other sub-tile takes the read-only
// path, as in the kernels without RoPE (with 3 blocks per SM: Llama-7B batch 128, 15.78 against 16.45 ms per step when
// every load goes through L2). Several rows, or staging, keep every load on L2: their registers grew with the choice.
// St: the first sub-tile is staged and runs on tensor cores (mm); the walk goes on from the second, in registers,
// or with Mw staged and on tensor cores too: each further sub-tile copied into the same buffers (cp.async, after the
// PDL wait) and joined to the walk state.
template <int HD, int R, int W, bool Co, bool St, bool Own, bool Mw = false>
__device__ __forceinline__ void warp_walk(const ItemView& v, int32_t page, uint16_t* k_st, uint16_t* v_st,
                                          const StagedMma& mm, const int (&q_pos)[R], const float* q_s, float* p_w,
                                          int own, WarpState<HD, R>& st) {
    static_assert(!St || ((Co || Mw) && HD == 128), "staging is written for the coalesced layout (or the mma walk)");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int first = v.kv_begin + warp * kKeys;
    int key = first + lane, base = first;
    if constexpr (St) {
        if (first < v.kv_end) {
            const int next = key + W * kKeys;  // the second sub-tile's page load overlaps the first's work
            page = next < v.kv_end ? __ldg(v.pages + next / v.page_size) : 0;
            staged_subtile_mma<R>(k_st, v_st, mm, min(kKeys, v.kv_end - first), first, q_pos, st);
            base += W * kKeys, key += W * kKeys;
        }
    }
    if constexpr (Mw) {
        static_assert(St, "the tensor-core walk goes on from the staged first sub-tile");
        for (; base < v.kv_end; base += W * kKeys, key += W * kKeys) {
            __syncwarp();  // every lane is done with the buffers (ldmatrix) of the sub-tile before
            stage_subtile(v, base, page, k_st, v_st);
            const int next = key + W * kKeys;
            page = next < v.kv_end ? __ldg(v.pages + next / v.page_size) : 0;
            cp_async_wait_all();
            __syncwarp();
            WarpState<HD, R> t;
            staged_subtile_mma<R>(k_st, v_st, mm, min(kKeys, v.kv_end - base), base, q_pos, t);
            join_walk_state(st, t);
        }
#pragma unroll
        for (int r = 0; r < R; ++r) st.l[r] = warp_sum(st.l[r]);
        return;
    }
    float qr[Co ? R : 1][8];  // coalesced Q·K: this lane's 8 columns of every row of q
    if constexpr (Co) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int c = 0; c < 8; ++c) qr[r][c] = q_s[r * HD + (lane & 15) * 8 + c];
    }
    // A slot's bytes fit 32 bits (pool_row).
    const uint32_t stride_bytes = uint32_t(v.slot_stride) * uint32_t(sizeof(uint16_t));
    int in_page = key % v.page_size;  // then carried from the division that finds the next sub-tile's page
    for (; base < v.kv_end; base += W * kKeys, key += W * kKeys) {
        const bool valid = key < v.kv_end;
        const int n_valid = min(kKeys, v.kv_end - base);
        // Lanes past the sub-tile's last key take its slot, so that Q·K and P·V load real rows unconditionally.
        int32_t slot = page * v.page_size + in_page;
        const int32_t last_slot = __shfl_sync(kFull, slot, n_valid - 1);
        if (!valid) slot = last_slot;
        const int next = key + W * kKeys;  // the next sub-tile's page load overlaps this one's work
        const int next_page = next / v.page_size;
        in_page = next - next_page * v.page_size;
        page = next < v.kv_end ? __ldg(v.pages + next_page) : 0;
        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
        const bool via_l2 = Own && (R > 1 || St || unsigned(own - base) < unsigned(kKeys));
        if constexpr (Co) {
            // Two instantiations, so that each load is one instruction (load_kv); only Own launches have the second.
            if (via_l2)
                qk_coalesced<R, true>(v.k_head, stride_bytes, slot, qr, s);
            else
                qk_coalesced<R, false>(v.k_head, stride_bytes, slot, qr, s);
        } else {
            qk_dot<HD, R>(v.k_head + int64_t(slot) * v.slot_stride, valid, q_s, s);
        }
        float pr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float sc = valid && key <= q_pos[r] ? s[r] : -INFINITY;
            const float m_new = fmaxf(st.m[r], warp_max(sc));
            const float alpha = m_new == -INFINITY ? 1.0f : exp2f(st.m[r] - m_new);  // exp2(-inf) = 0
            pr[r] = sc == -INFINITY ? 0.0f : exp2f(sc - m_new);
            st.l[r] = st.l[r] * alpha + pr[r];
            st.m[r] = m_new;
#pragma unroll
            for (int c = 0; c < HD / 32; ++c) st.acc[r][c] *= alpha;
        }
        __syncwarp();  // the previous sub-tile's P reads are done
#pragma unroll
        for (int r = 0; r < R; ++r) p_w[lane * R + r] = pr[r];
        __syncwarp();
        if (via_l2)
            pv_accumulate<HD, R, true>(v.v_head, slot, stride_bytes, n_valid, p_w, lane, st.acc);
        else
            pv_accumulate<HD, R, false>(v.v_head, slot, stride_bytes, n_valid, p_w, lane, st.acc);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) st.l[r] = warp_sum(st.l[r]);
}

// Where block_merge_write puts rows [r0, r0 + R): the item's partial (m in natural-log units, as the merge
// kernel expects), or — when the item is its tile's only one — the normalised bf16 output rows themselves.
struct RowSink {
    float* partial_tile;  // null: direct
    const AttentionParams* p;
    int q_begin, kvh, row_begin, tile_rows, group;
};

// Combines the W warps' states through shared memory and writes rows [r0, r0 + R).
template <int HD, int R, int W>
__device__ __forceinline__ void block_merge_write(const WarpState<HD, R>& st, float* smem, const RowSink& sink,
                                                  int r0) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float* m_s = smem;
    float* l_s = m_s + W * R;
    float* a_s = l_s + W * R;
    __syncthreads();  // every warp is done with q_s / P and (staged) K / V, which these buffers overlay
    if (lane == 0)
#pragma unroll
        for (int r = 0; r < R; ++r) m_s[warp * R + r] = st.m[r], l_s[warp * R + r] = st.l[r];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int c = 0; c < HD / 32; ++c) a_s[(warp * R + r) * HD + lane * (HD / 32) + c] = st.acc[r][c];
    __syncthreads();
    for (int idx = threadIdx.x; idx < R * HD; idx += 32 * W) {
        const int r = idx / HD, d = idx - r * HD;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < W; ++w) mx = fmaxf(mx, m_s[w * R + r]);
        float l = 0.0f, a = 0.0f;
#pragma unroll
        for (int w = 0; w < W; ++w) {
            const float mw = m_s[w * R + r];
            const float wt = mw == -INFINITY ? 0.0f : exp2f(mw - mx);
            l = fmaf(wt, l_s[w * R + r], l);
            a = fmaf(wt, a_s[(w * R + r) * HD + d], a);
        }
        if (sink.partial_tile) {
            float* dst = sink.partial_tile + int64_t(r0 + r) * (HD + 2);
            dst[2 + d] = a;
            if (d == 0) dst[0] = mx * kLn2, dst[1] = l;  // -inf stays -inf
        } else if (r0 + r < sink.tile_rows) {
            const int row = sink.row_begin + r0 + r, tok = row / sink.group;
            const int h = sink.kvh * sink.group + row % sink.group;
            __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(sink.p->out) +
                                 int64_t(sink.q_begin + tok) * sink.p->n_heads * HD + int64_t(h) * HD + d;
            *out = __float2bfloat16_rn(l > 0.0f ? a / l : 0.0f);
        }
    }
}

// The fused merge (merge_counters set): after every block of the item's group has written its partial, the last
// one to count itself in combines the group's partials in item order (as the merge kernel does) and writes the
// tile's rows. Partials are read through L2 (__ldcg): other blocks wrote them, this block's L1 never held them.
// g is the item's merge group, read before the PDL wait (step metadata). Each thread combines two adjacent
// columns (one 8-byte load per partial); up to kMergeChunk items load m, l and acc in one round trip.
template <int HD>
__device__ __forceinline__ void merge_if_last(const AttentionParams& p, const AttentionMergeGroup& g,
                                              const AttentionWorkItem& it, const float* ws, const RowSink& sink) {
    __shared__ int last;
    __threadfence();  // this block's partial is visible device-wide before it counts itself in
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t* counter = p.merge_counters + int64_t(it.merge_group) * p.n_kv_heads + sink.kvh;
        last = atomicAdd(counter, 1) == g.item_end - g.item_begin - 1;
        if (last) atomicExch(counter, 0);  // every block of the group has counted: ready for the next launch
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int idx = 2 * threadIdx.x; idx < sink.tile_rows * HD; idx += 2 * blockDim.x) {
        const int r = idx / HD, d = idx - r * HD;
        auto part = [&](int item) {
            return ws + ((int64_t(item) * p.n_kv_heads + sink.kvh) * kAttentionTileRows + r) * (HD + 2);
        };
        // Items in chunks of kMergeChunk whose loads are all issued before their math (one L2 round trip per
        // chunk; decode plans have at most 16 splits), the running sums rescaled when a chunk raises the max.
        float mx = -INFINITY, l = 0.0f;
        float2 a = make_float2(0.0f, 0.0f);
        for (int i0 = g.item_begin; i0 < g.item_end; i0 += kMergeChunk) {
            float m[kMergeChunk], li[kMergeChunk];
            float2 ai[kMergeChunk];
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) {
                const bool in = i0 + k < g.item_end;
                const float* pi = part(i0 + k);
                m[k] = in ? __ldcg(pi) : -INFINITY, li[k] = in ? __ldcg(pi + 1) : 0.0f;
                ai[k] = in ? __ldcg(reinterpret_cast<const float2*>(pi + 2 + d)) : make_float2(0.0f, 0.0f);
            }
            float cm = mx;
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) cm = fmaxf(cm, m[k]);
            if (cm == -INFINITY) continue;  // nothing seen yet: l and a stay 0
            const float rescale = mx == -INFINITY ? 0.0f : expf(mx - cm);
            l *= rescale, a.x *= rescale, a.y *= rescale;
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) {
                const float w = m[k] == -INFINITY ? 0.0f : expf(m[k] - cm);
                l = fmaf(w, li[k], l), a.x = fmaf(w, ai[k].x, a.x), a.y = fmaf(w, ai[k].y, a.y);
            }
            mx = cm;
        }
        const int row = sink.row_begin + r, tok = row / sink.group, h = sink.kvh * sink.group + row % sink.group;
        __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(p.out) + int64_t(sink.q_begin + tok) * p.n_heads * HD +
                             int64_t(h) * HD + d;
        *reinterpret_cast<__nv_bfloat162*>(out) =
            l > 0.0f ? __floats2bfloat162_rn(a.x / l, a.y / l) : __floats2bfloat162_rn(0.0f, 0.0f);
    }
}

// The RoPE-fused kernel's q rows and fresh key, one warp per head (the math is rope_kv_write's, rope_head.cuh, a
// pending q|k|v LoRA delta included): q rows 0 .. group - 1 into q_s (rounded to bf16 as rope_kv_write stores them,
// then scaled), zeros for rows up to R; and where the block's keys [0, n_keys) hold the fresh one (at offset fresh),
// its K and V rows into the pools and, when the launch stages (st_base set) and that key lies in a warp's first
// sub-tile, into that warp's staging buffer. Otherwise the walk reads it back from the pool through L2 (warp_walk's
// Own). Staged launches also get the q rows unscaled in bf16 (q_bf), for the tensor cores. Dl: rope.qkv_delta is set
// (the q|k|v LoRA expand ran beside the projection); its own instantiation, so that the kernels without a delta keep
// their machine code (a runtime pointer took Qwen3-0.6B's 8-warp whole-sequence kernel from 128 to 171 registers).
template <int HD, int R, int W, bool Dl>
__device__ __forceinline__ void rope_into_block(const RopeKvParams& rope, float q_scale, int tok, int kvh, int group,
                                                int n_heads, int n_kv_heads, int fresh, int n_keys, int32_t fresh_slot,
                                                const detail::RopeAngles& angles, float* q_s, uint16_t* st_base,
                                                uint16_t* q_bf) {
    constexpr int kHalf = HD / 2;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const bool owner = fresh >= 0 && fresh < n_keys;
    const int sub = fresh / kKeys;  // the fresh key's sub-tile: warp sub % W's (sub / W)-th
    uint16_t* staged = st_base && owner && sub < W ? st_base + sub * 2 * kKeys * HD : nullptr;
    const int st_row = fresh % kKeys;
    const uint16_t* row = rope.qkv + int64_t(tok) * rope.qkv_row_stride;
    for (int job = warp; job < group + (owner ? 2 : 0); job += W) {
        const bool is_q = job < group, is_v = job == group + 1;
        const int head = is_q ? kvh * group + job : n_heads + (is_v ? n_kv_heads : 0) + kvh;
        float lo[detail::kRopeMaxPairsPerLane], hi[detail::kRopeMaxPairsPerLane];
        const float* delta = Dl ? rope.qkv_delta + int64_t(tok) * rope.qkv_row_stride + int64_t(head) * HD : nullptr;
        detail::rope_head(row + int64_t(head) * HD, delta, kHalf,
                          is_v   ? nullptr
                          : is_q ? rope.q_norm
                                 : rope.k_norm,
                          rope.norm_eps, !is_v, angles, lane, lo, hi);
        uint16_t* pool = (is_v ? rope.v_pages : rope.k_pages) + (int64_t(fresh_slot) * n_kv_heads + kvh) * HD;
        uint16_t* mine = staged ? staged + (is_v ? kKeys * HD : 0) : nullptr;
#pragma unroll
        for (int k = 0; k < detail::kRopeMaxPairsPerLane; ++k) {
            const int i = lane + 32 * k;
            if (i >= kHalf) continue;
            const __nv_bfloat16 a = __float2bfloat16_rn(lo[k]), b = __float2bfloat16_rn(hi[k]);
            const uint16_t ab = __bfloat16_as_ushort(a), bb = __bfloat16_as_ushort(b);
            if (is_q) {
                q_s[job * HD + i] = __bfloat162float(a) * q_scale;
                q_s[job * HD + i + kHalf] = __bfloat162float(b) * q_scale;
                if (q_bf) q_bf[job * kQbStride + i] = ab, q_bf[job * kQbStride + i + kHalf] = bb;
                continue;
            }
            pool[i] = ab, pool[i + kHalf] = bb;
            if (mine) mine[staged_off(st_row, i)] = ab, mine[staged_off(st_row, i + kHalf)] = bb;
        }
    }
    for (int idx = group * HD + threadIdx.x; idx < R * HD; idx += 32 * W) q_s[idx] = 0.0f;
}

// Rp: RoPE fused (coalesced launches of one query token per sequence, attention_decode_rope): the block computes its
// group's q rows itself (q/k norm + rotation, as rope_kv_write would) from the un-rotated q|k|v row, and the block
// whose keys hold the fresh one also writes that key's K and V into the pools and into its staging buffer.
// Mw: the whole walk staged and on tensor cores (warp_walk).
template <int HD, int R, int W, bool Co, bool St, bool Rp, bool Mw = false, bool Dl = false>
__global__ void __launch_bounds__(32 * W, kMinBlocks<HD, R, W, St, Mw>)
    attention_decode_kernel(AttentionParams p, const AttentionWorkItem* items, const AttentionMergeGroup* groups,
                            float* ws, bool direct, RopeKvParams rope) {
    static_assert(!Rp || Co, "RoPE is fused into the coalesced kernel only");
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    // Staged K and V of each warp's sub-tile, past the q / P buffers: [W][K, V][32][HD].
    uint16_t* st_base = reinterpret_cast<uint16_t*>(smem4 + decode_head_bytes<HD, R, W, St>() / 16);
    uint16_t* k_st = st_base + (threadIdx.x >> 5) * 2 * kKeys * HD;
    uint16_t* v_st = k_st + kKeys * HD;
    uint16_t* q_bf = st_base + W * 2 * kKeys * HD;  // St: [8][kQbStride]
    char* warp_extra = reinterpret_cast<char*>(q_bf + 8 * kQbStride) + (threadIdx.x >> 5) * kStagedWarpExtra;
    static_assert(!St || R * HD * 4 <= kKeys * HD * 2, "O^T [R][HD] f32 fits the warp's K buffer");
    const StagedMma mm{q_bf, reinterpret_cast<uint16_t*>(warp_extra), reinterpret_cast<float*>(k_st), p.scale * kLog2e};
    float* q_s = smem;                                            // [R][HD], scaled by scale * log2 e
    float* p_w = smem + R * HD + (threadIdx.x >> 5) * kKeys * R;  // this warp's P [32][R]
    // Blocks in (item, KV head) order, heads fastest (launch_decode_warps).
    const int item = blockIdx.x / p.n_kv_heads, kvh = blockIdx.x - item * p.n_kv_heads;
    const int group = p.n_heads / p.n_kv_heads;
    const AttentionWorkItem it = items[item];
    const int q_begin = p.qo_indptr[it.seq], n_q = p.qo_indptr[it.seq + 1] - q_begin;
    const int pg_begin = p.kv_indptr[it.seq], n_pages = p.kv_indptr[it.seq + 1] - pg_begin;
    const int kv_len = n_pages == 0 ? 0 : (n_pages - 1) * p.page_size + p.kv_last_page_len[it.seq];
    const ItemView v{it.kv_begin,
                     min(it.kv_end, kv_len),
                     p.kv_indices + pg_begin,
                     p.page_size,
                     p.k_pages + int64_t(kvh) * HD,
                     p.v_pages + int64_t(kvh) * HD,
                     int64_t(p.n_kv_heads) * HD};
    // Everything above is step metadata written before the step's first kernel (attention_decode's contract), so
    // it is read while the predecessor (q/k norm + RoPE + KV write) still runs; q and K/V only after the wait.
    const int32_t page0 = first_page(v);
    const int fresh_begin = kv_len - n_q;  // this step's keys: the predecessor writes them
    const bool merges = W == kSplitWarps && !direct && p.merge_counters;
    AttentionMergeGroup g{};
    if (merges) g = groups[it.merge_group];
    if constexpr (St) stage_first_subtile(v, page0, fresh_begin, false, k_st, v_st);
    detail::RopeAngles angles;
    int32_t fresh_slot = 0;
    if constexpr (Rp) {
        detail::rope_angles(rope.positions[q_begin], rope.inv_freq, HD / 2, threadIdx.x & 31, angles);
        fresh_slot = rope.kv_slots[q_begin];
    }
    {  // into L2: this lane's first key's K and V rows, or with staging its second sub-tile's (an L2 prefetch is
       // safe even for the slot the predecessor writes: L2 is where its write lands)
        const int key = v.kv_begin + (threadIdx.x >> 5) * kKeys + (threadIdx.x & 31) + (St ? W * kKeys : 0);
        if (key < v.kv_end) {
            const int32_t page = St ? __ldg(v.pages + key / v.page_size) : page0;
            const int64_t off = int64_t(page * v.page_size + key % v.page_size) * v.slot_stride;
#pragma unroll
            for (int c = 0; c < HD; c += 64)
                detail::prefetch_l2(v.k_head + off + c), detail::prefetch_l2(v.v_head + off + c);
        }
    }
    detail::pdl_wait();
    if constexpr (St && !Rp) stage_first_subtile(v, page0, fresh_begin, true, k_st, v_st);
    // Rows of the tile: token_in_seq * group + head_in_group. Decode has one pass (R >= group rows); tiles
    // of several tokens (not decode) still come out right, in several passes.
    const int tile_rows = min(kAttentionTileRows, n_q * group - it.row_begin);
    const RowSink sink{direct ? nullptr : ws + (int64_t(item) * p.n_kv_heads + kvh) * kAttentionTileRows * (HD + 2),
                       &p,
                       q_begin,
                       kvh,
                       it.row_begin,
                       tile_rows,
                       group};
    for (int r0 = 0; r0 < tile_rows; r0 += R) {
        __syncthreads();  // the previous pass's merge is done with the buffers q_s overlays
        // Tiles of several tokens (never a decode step, whose one pass the RoPE-fused kernels are limited to): the
        // previous pass's walk, its O^T and its merge wrote over the staged first sub-tile.
        if constexpr (St && !Rp)
            if (r0 > 0) {
                stage_first_subtile(v, page0, fresh_begin, false, k_st, v_st);
                stage_first_subtile(v, page0, fresh_begin, true, k_st, v_st);
            }
        if constexpr (Rp)  // one pass: one token, group <= R rows
            rope_into_block<HD, R, W, Dl>(rope, p.scale * kLog2e, q_begin, kvh, group, p.n_heads, p.n_kv_heads,
                                          fresh_begin - v.kv_begin, v.kv_end - v.kv_begin, fresh_slot, angles, q_s,
                                          St ? st_base : nullptr, St ? q_bf : nullptr);
        for (int idx = threadIdx.x; !Rp && idx < R * HD; idx += 32 * W) {
            const int r = idx / HD, d = idx - r * HD, row = it.row_begin + r0 + r;
            float x = 0.0f;
            if (r0 + r < tile_rows) {
                const int tok = row / group, h = kvh * group + row % group;
                const uint16_t* q = p.q + int64_t(q_begin + tok) * p.q_row_stride + int64_t(h) * HD + d;
                const __nv_bfloat16 qv = *reinterpret_cast<const __nv_bfloat16*>(q);
                x = __bfloat162float(qv) * (p.scale * kLog2e);
                if constexpr (St) q_bf[r * kQbStride + d] = __bfloat16_as_ushort(qv);
            } else if constexpr (St) {
                q_bf[r * kQbStride + d] = 0;
            }
            q_s[idx] = x;
        }
        if constexpr (St)  // q rows the tensor cores read past the ones written above
            for (int idx = (Rp ? group : R) * HD + threadIdx.x; idx < 8 * HD; idx += 32 * W)
                q_bf[idx / HD * kQbStride + idx % HD] = 0;
        int q_pos[R];  // -1: a row past the tile sees no key
#pragma unroll
        for (int r = 0; r < R; ++r) q_pos[r] = r0 + r < tile_rows ? kv_len - n_q + (it.row_begin + r0 + r) / group : -1;
        WarpState<HD, R> st;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            st.m[r] = -INFINITY, st.l[r] = 0.0f;
#pragma unroll
            for (int c = 0; c < HD / 32; ++c) st.acc[r][c] = 0.0f;
        }
        if constexpr (St) cp_async_wait_all();  // the barrier below then shows every lane's copies to the warp
        __syncthreads();
        warp_walk<HD, R, W, Co, St, Rp, Mw>(v, page0, k_st, v_st, mm, q_pos, q_s, p_w, fresh_begin, st);
        block_merge_write<HD, R, W>(st, smem, sink, r0);
    }
    // Only split launches merge (4 warps); the 8-warp kernels never carry the merge code, and 4-warp whole-sequence
    // launches (direct) skip it.
    if constexpr (W == kSplitWarps) {
        if (merges) merge_if_last<HD>(p, g, it, ws, sink);
    }
}

// One launch's arguments, passed down the shape dispatch.
struct DecodeLaunch {
    const AttentionParams* p;
    const AttentionWorkItem* items;
    int n_items;
    const AttentionMergeGroup* groups;
    int n_groups;
    float* ws;
    bool direct;  // every item is its row tile's only one (no split)
    detail::DecodeQkLayout layout;
    detail::DecodeStaging staging;
    const RopeKvParams* rope;  // set: RoPE + KV write fused (attention_decode_rope checked that it applies)
    cudaStream_t stream;
};

int device_sms();

// Dynamic shared memory that keeps blocks_per_sm + 1 blocks of it from sharing an SM (the least such, in whole 16
// bytes), or 0 where the device's figures cannot say.
int smem_for_at_most(int blocks_per_sm) {
    static const std::pair<int, int> sm_and_reserved = [] {
        int dev = 0, per_sm = 0, reserved = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) != cudaSuccess)
            cudaGetLastError(), per_sm = 0;
        return std::make_pair(per_sm, reserved);
    }();
    const auto [per_sm, reserved] = sm_and_reserved;
    if (per_sm <= 0) return 0;
    return (per_sm / (blocks_per_sm + 1) - reserved) / 16 * 16 + 16;
}

// The most dynamic shared memory an instantiation launches with: its own, or for the tensor-core walk (Mw) enough to
// hold it to 2 blocks per SM (mw_launch_smem).
template <int HD, int R, int W, bool St, bool Mw>
int decode_max_launch_smem() {
    constexpr int smem = decode_kernel_smem<HD, R, W, St>();
    return Mw ? std::max(smem, smem_for_at_most(2)) : smem;
}

// Lets an instantiation take its dynamic shared memory beyond the default 48 KB, once (cached); fails where the GPU
// gives a block less than the staged kernels need.
template <int HD, int R, int W, bool Co, bool St, bool Rp, bool Mw = false, bool Dl = false>
cudaError_t allow_smem() {
    constexpr int smem = decode_kernel_smem<HD, R, W, St>();
    if constexpr (smem <= 48 * 1024 && !Mw) {
        return cudaSuccess;
    } else {
        static const cudaError_t e = [] {
            const cudaError_t r = cudaFuncSetAttribute(attention_decode_kernel<HD, R, W, Co, St, Rp, Mw, Dl>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       decode_max_launch_smem<HD, R, W, St, Mw>());
            if (r != cudaSuccess) cudaGetLastError();  // not sticky: the caller decides
            return r;
        }();
        return e;
    }
}

template <int HD, int R, int W, bool Co, bool St = false, bool Mw = false>
int resident_blocks();

// The tensor-core walk's shared memory per block for a launch of `blocks`: its own, or more where fewer blocks per SM
// than registers and shared memory allow give the launch as few waves (decode_mma_blocks_per_sm; the rest of the SM
// stays empty).
template <int HD, int R, int W, bool Co>
int mw_launch_smem(unsigned blocks) {
    constexpr int smem = decode_kernel_smem<HD, R, W, true>();
    const int most = resident_blocks<HD, R, W, Co, true, true>();
    const int k = decode_mma_blocks_per_sm(blocks, device_sms(), most);
    const int capped = k < most ? smem_for_at_most(k) : 0;
    return capped > smem && capped <= decode_max_launch_smem<HD, R, W, true, true>() ? capped : smem;
}

template <int HD, int R, int W, bool Co, bool St, bool Rp = false, bool Mw = false, bool Dl = false>
cudaError_t launch_decode_warps(const DecodeLaunch& l) {
    if constexpr (Rp && !Dl) {  // a pending q|k|v LoRA delta takes the instantiation that adds it
        if (l.rope->qkv_delta) return launch_decode_warps<HD, R, W, Co, St, true, Mw, true>(l);
    }
    if (const cudaError_t e = allow_smem<HD, R, W, Co, St, Rp, Mw, Dl>(); e != cudaSuccess) return e;
    // One block per (item, KV head), the heads of an item next to each other: blocks start in about index order, so
    // the blocks running at once read the same slots' rows of neighbouring heads, which lie next to each other in the
    // pools. With the items fastest instead, the RoPE-fused MHA kernel took 303 us per layer of the Llama-7B batch-128
    // step, against 297.6 with the heads fastest (CUPTI, H200, twenty-third session; decode_attention_bench, whose
    // rows are not written just before, shows none at 544 keys and 143.5 against 147.4 us at batch 16 x 2,048). A 1-D
    // grid: no 65,535 bound on the items.
    const unsigned blocks = unsigned(l.n_items) * unsigned(l.p->n_kv_heads);
    int smem = decode_kernel_smem<HD, R, W, St>();
    if constexpr (Mw) smem = mw_launch_smem<HD, R, W, Co>(blocks);
    return detail::launch(attention_decode_kernel<HD, R, W, Co, St, Rp, Mw, Dl>, dim3(blocks), 32 * W, smem, l.stream,
                          *l.p, l.items, l.groups, l.ws, l.direct, l.rope ? *l.rope : RopeKvParams{});
}

// Blocks of one instantiation that an SM holds at once (registers and shared memory decide; cached). 0 where it
// cannot run at all (a staged kernel's shared memory beyond what the GPU gives a block).
template <int HD, int R, int W, bool Co, bool St, bool Mw>
int resident_blocks() {
    static const int n = [] {
        constexpr int smem = decode_kernel_smem<HD, R, W, St>();
        int b = 0;
        if (allow_smem<HD, R, W, Co, St, false, Mw>() != cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, attention_decode_kernel<HD, R, W, Co, St, false, Mw>,
                                                          32 * W, smem) != cudaSuccess)
            cudaGetLastError(), b = St ? 0 : 1;
        return St || b > 0 ? b : 1;
    }();
    return n;
}

// Staging holds 16 KB of shared memory per warp (and ~224 registers per thread), which a block keeps until it
// exits: taken only while the grid has at most one block per SM, so that the next kernel's blocks (PDL) still
// find room beside it to start their weight loads early. H100, Qwen3-8B batch 8 x 512 keys (256 blocks):
// decode_attention_bench 14.7 us staged against 17.4 us, yet the step got slower, 7.44 against 7.23 ms.
template <int HD, int R, int W>
bool staging_pays(const DecodeLaunch& l) {
    return int64_t(l.n_items) * l.p->n_kv_heads <= device_sms() && resident_blocks<HD, R, W, true, true>() > 0;
}

template <int HD, int R, int W, bool Co>
cudaError_t launch_decode_staging(const DecodeLaunch& l) {
    if constexpr (Co && HD == 128) {
        const bool stage = l.staging == detail::DecodeStaging::automatic && staging_pays<HD, R, W>(l);
        if (l.rope)
            return stage ? launch_decode_warps<HD, R, W, Co, true, true>(l)
                         : launch_decode_warps<HD, R, W, Co, false, true>(l);
        if (stage) return launch_decode_warps<HD, R, W, Co, true>(l);
    }
    // attention_decode_rope fuses only where this dispatch takes the coalesced kernel; never drop the RoPE silently.
    if (l.rope) return cudaErrorInvalidValue;
    return launch_decode_warps<HD, R, W, Co, false>(l);
}

// Whether a direct launch (every item a whole sequence) takes 4-warp blocks (kSplitWarps' comment): one query row, and
// where the longest sequence is known (AttentionParams::max_kv_len), the block size of fewer waves x rounds
// (decode_whole_in_4_warps: Llama-7B batch 32 x 2,048 keys on the H200, 13.13 / 13.03 ms per step with 8 warps against
// 14.42 / 14.38 with 4); else more blocks than one wave of 8-warp ones (batch 16 x 512 keys, 512 blocks: 5.61 against
// 5.63 ms with 8 warps and 5.96 before either change; batch 12, 384 blocks, 8 warps: 5.44 against 5.78).
template <int HD, int R>
bool whole_in_split_blocks(const DecodeLaunch& l) {
    if constexpr (R != 1) {
        return false;
    } else {
        constexpr bool Co = kCoalescedQk<HD, R>;
        const int64_t blocks = int64_t(l.n_items) * l.p->n_kv_heads;
        if (HD <= 128 && l.p->max_kv_len > 0) return decode_whole_in_4_warps(blocks, l.p->max_kv_len, device_sms());
        return blocks > int64_t(resident_blocks<HD, R, kWholeWarps, Co>()) * device_sms();
    }
}

// Whether the launch takes 8-warp blocks: direct (whole-sequence blocks writing the output) and not
// whole_in_split_blocks; else 4 warps, writing partials unless direct.
template <int HD, int R>
bool eight_warps(const DecodeLaunch& l) {
    return l.direct && !whole_in_split_blocks<HD, R>(l);
}

template <int HD, int R, bool Co>
cudaError_t launch_decode_layout(const DecodeLaunch& l) {
    return eight_warps<HD, R>(l) ? launch_decode_staging<HD, R, kWholeWarps, Co>(l)
                                 : launch_decode_staging<HD, R, kSplitWarps, Co>(l);
}

int device_sms() {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        cudaGetLastError(), n = 1;
    return n;
}

// The coalesced Q·K holds more registers (at R = 4: 225 against 110 per thread with 8 warps). Where that costs
// resident blocks it only pays while the whole grid still runs in one wave (decode_attention_bench: Qwen3-8B
// batch 32 x 512 keys, 256 blocks, 44.5 us coalesced against 39.8 us lane per key; batch 1 x 8192 keys in
// 32 splits, 256 blocks of 4 warps, 43.7 against 52.4 us).
template <int HD, int R, int W>
bool coalesced_pays(const DecodeLaunch& l) {
    const int co = resident_blocks<HD, R, W, true>(), lk = resident_blocks<HD, R, W, false>();
    return co >= lk || int64_t(l.n_items) * l.p->n_kv_heads <= int64_t(co) * device_sms();
}

// The same, for the block size launch_decode_layout gives this launch.
template <int HD, int R>
bool coalesced_pays_here(const DecodeLaunch& l) {
    return eight_warps<HD, R>(l) ? coalesced_pays<HD, R, kWholeWarps>(l) : coalesced_pays<HD, R, kSplitWarps>(l);
}

// Shapes whose walk can go on past the staged first sub-tile on tensor cores (warp_walk's Mw): head_dim 128 with 2-8
// query rows per KV head, where the register walk's FMA chains for several rows, not DRAM, bound it. 2-4 rows take
// it where staging alone does not (a grid beyond one block per SM), 2 rows (half the register walk's work per key)
// only from a full wave of its blocks on; 5-8 rows, which have no staged kernel, at every grid size. 4-warp blocks.
// H200, decode_attention_bench µs per layer, register walk against this: Qwen3-8B x 544 keys batch 32 38.4 / 28.7,
// batch 128 149.2 / 108.9, batch 8 in 4 splits 21.5 / 13.2; Qwen2.5-7B (7 rows) x 544 keys batch 1 15.7 / 11.4,
// batch 32 36.6 / 24.2, batch 128 142.8 / 64.2; Qwen3-0.6B ms per step: batch 32 (256 blocks) 1.962 / 1.996, batch
// 64 2.840 / 2.778, batch 128 4.440 / 4.203 (docs/cuda-benchmarks.md, nineteenth session).
template <int HD, int R>
constexpr bool kMmaWalk = HD == 128 && R >= 2 && R <= 8;

template <int HD, int R>
bool mma_walk_pays(const DecodeLaunch& l) {
    if constexpr (!kMmaWalk<HD, R>) {
        return false;
    } else {
        if (l.staging != detail::DecodeStaging::automatic || l.layout != detail::DecodeQkLayout::automatic)
            return false;
        const int64_t blocks = int64_t(l.n_items) * l.p->n_kv_heads, sms = device_sms();
        const int per_sm = resident_blocks<HD, R, kSplitWarps, kCoalescedQk<HD, R>, true, true>();
        // 5-8 rows have no staged kernel to leave the small grids to.
        return per_sm > 0 && (blocks > sms || !kCoalescedQk<HD, R>)&&(R > 2 || blocks >= per_sm * sms);
    }
}

template <int HD, int R>
cudaError_t launch_decode(const DecodeLaunch& l) {
    if constexpr (kMmaWalk<HD, R>) {
        if (mma_walk_pays<HD, R>(l)) {
            if constexpr (kCoalescedQk<HD, R>)
                return l.rope ? launch_decode_warps<HD, R, kSplitWarps, true, true, true, true>(l)
                              : launch_decode_warps<HD, R, kSplitWarps, true, true, false, true>(l);
            else  // 5-8 rows: RoPE never fuses (rope_fuses), the register walk's layout is lane per key
                return l.rope ? cudaErrorInvalidValue
                              : launch_decode_warps<HD, R, kSplitWarps, false, true, false, true>(l);
        }
    }
    if constexpr (kCoalescedQk<HD, R>) {
        using detail::DecodeQkLayout;
        if (l.layout == DecodeQkLayout::coalesced ||
            (l.layout == DecodeQkLayout::automatic && coalesced_pays_here<HD, R>(l)))
            return launch_decode_layout<HD, R, true>(l);
    }
    return launch_decode_layout<HD, R, false>(l);
}

template <int HD>
cudaError_t launch_decode_rows(const DecodeLaunch& l, int group) {
    if (group <= 1) return launch_decode<HD, 1>(l);
    if (group <= 2) return launch_decode<HD, 2>(l);
    if (group <= 4) return launch_decode<HD, 4>(l);
    // 16 rows x 8 columns of accumulators would spill at head_dim 256: two passes of 8 rows instead.
    if constexpr (HD > 128) {
        return launch_decode<HD, 8>(l);
    } else {
        if (group <= 8) return launch_decode<HD, 8>(l);
        return launch_decode<HD, 16>(l);
    }
}

// Launches the decode kernel the shapes pick, then the merge kernel where the plan splits without merge counters.
cudaError_t run_decode(const DecodeLaunch& l) {
    const AttentionParams& p = *l.p;
    const int group = p.n_heads / p.n_kv_heads;
    cudaError_t e = cudaErrorInvalidValue;
    switch (p.head_dim) {
        case 64:
            e = launch_decode_rows<64>(l, group);
            break;
        case 128:
            e = launch_decode_rows<128>(l, group);
            break;
        case 256:
            e = launch_decode_rows<256>(l, group);
            break;
        default:
            break;
    }
    if (e != cudaSuccess || l.direct || p.merge_counters) return e;
    return detail::attention_merge(p, l.groups, l.n_groups, l.ws, l.stream);
}

// Whether launch_decode will take the coalesced kernel for this launch (the same decision, cached per shape).
template <int R>
bool decode_takes_coalesced(const DecodeLaunch& l) {
    return mma_walk_pays<128, R>(l) || coalesced_pays_here<128, R>(l);
}

// RoPE fuses into a coalesced launch of one query token per sequence over the very pools rope_kv_write would fill.
// A pending q|k|v LoRA delta (RopeKvParams::qkv_delta) is added as the rows are loaded, as rope_kv_write adds it.
bool rope_fuses(const DecodeLaunch& l, const RopeKvParams& r) {
    const AttentionParams& p = *l.p;
    if (p.head_dim != 128 || r.head_dim != 128 || r.n_heads != p.n_heads || r.n_kv_heads != p.n_kv_heads) return false;
    if (r.n_tokens != p.n_seqs || r.k_pages != p.k_pages || r.v_pages != p.v_pages || l.n_items == 0) return false;
    const int group = p.n_heads / p.n_kv_heads;
    return group <= 1   ? decode_takes_coalesced<1>(l)
           : group <= 2 ? decode_takes_coalesced<2>(l)
                        : group <= 4 && decode_takes_coalesced<4>(l);
}

}  // namespace

namespace detail {

cudaError_t attention_decode_with(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                                  const AttentionMergeGroup* groups, int n_groups, float* workspace,
                                  DecodeQkLayout layout, DecodeStaging staging, cudaStream_t stream) {
    if (!attention_decode_supported(p)) return cudaErrorInvalidValue;
    if (n_items == 0) return cudaSuccess;
    // As many items as merge groups: each group (row tile) has exactly one item spanning its whole causal
    // horizon, so the block can normalise and write the output itself.
    return run_decode(
        {&p, items, n_items, groups, n_groups, workspace, n_items == n_groups, layout, staging, nullptr, stream});
}

}  // namespace detail

cudaError_t attention_decode(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                             const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream) {
    return detail::attention_decode_with(p, items, n_items, groups, n_groups, workspace,
                                         detail::DecodeQkLayout::automatic, detail::DecodeStaging::automatic, stream);
}

namespace {

// A launch of the decode kernels with the layout and staging their shapes pick.
DecodeLaunch automatic_launch(const AttentionParams& p, const RopeKvParams* rope, const AttentionWorkItem* items,
                              int n_items, const AttentionMergeGroup* groups, int n_groups, float* workspace,
                              cudaStream_t stream) {
    return {&p,
            items,
            n_items,
            groups,
            n_groups,
            workspace,
            n_items == n_groups,
            detail::DecodeQkLayout::automatic,
            detail::DecodeStaging::automatic,
            rope,
            stream};
}

}  // namespace

bool attention_decode_rope_fuses(const AttentionParams& p, const RopeKvParams& rope, int n_items, int n_groups) {
    if (!attention_decode_supported(p)) return false;
    return rope_fuses(automatic_launch(p, &rope, nullptr, n_items, nullptr, n_groups, nullptr, nullptr), rope);
}

cudaError_t attention_decode_rope(const AttentionParams& p, const RopeKvParams& rope, const AttentionWorkItem* items,
                                  int n_items, const AttentionMergeGroup* groups, int n_groups, float* workspace,
                                  cudaStream_t stream) {
    if (!attention_decode_supported(p)) return cudaErrorInvalidValue;
    DecodeLaunch l = automatic_launch(p, &rope, items, n_items, groups, n_groups, workspace, stream);
    if (rope_fuses(l, rope)) return run_decode(l);
    if (cudaError_t e = rope_kv_write(rope, stream); e != cudaSuccess) return e;
    l.rope = nullptr;
    return n_items == 0 ? cudaSuccess : run_decode(l);
}

bool attention_decode_supported(const AttentionParams& p) {
    if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) return false;
    if (p.n_kv_heads <= 0 || p.n_heads <= 0 || p.n_heads % p.n_kv_heads != 0) return false;
    if (p.n_heads / p.n_kv_heads > kAttentionTileRows || p.page_size <= 0) return false;
    // 16-byte K loads and 4..16-byte V loads straight from the pools.
    return reinterpret_cast<uintptr_t>(p.k_pages) % 16 == 0 && reinterpret_cast<uintptr_t>(p.v_pages) % 16 == 0;
}

}  // namespace loradesk::kernels
