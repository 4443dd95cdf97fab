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
#include <cuda_bf16.h>

#include <cstdint>

#include "attention_internal.h"
#include "launch_pdl.cuh"
#include "launchers.h"

namespace loradesk::kernels {
namespace {

// Warps per block: 4 when the plan splits keys over many blocks (partials + merge kernel); 8 when every item
// holds a whole sequence (no split: short contexts), so that one block walks up to ~1,000 keys in a few
// sub-tiles per warp and writes the output itself — no workspace round trip, no merge launch.
constexpr int kSplitWarps = 4;
constexpr int kWholeWarps = 8;
constexpr int kKeys = 32;  // keys per warp sub-tile: one per lane
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kMergeChunk = 8;  // partials the fused merge loads at once

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

// The raw load a lane does per V row in P·V: head_dim/32 bf16 columns, 4, 8 or 16 bytes.
template <int N>
struct RawCols;
template <>
struct RawCols<2> {
    using Type = unsigned int;
};
template <>
struct RawCols<4> {
    using Type = uint2;
};
template <>
struct RawCols<8> {
    using Type = uint4;
};

template <class T, int N>
__device__ __forceinline__ void unpack_bf16(const T& raw, float (&out)[N]) {
    static_assert(sizeof(T) == 2 * N, "raw load and column count disagree");
    const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        const float2 f = __bfloat1622float2(b[i]);
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
    }
}

// Compile-time shape of one instantiation: HD = head_dim, R = query rows per pass (power of two >= group).
template <int HD, int R>
struct DecodeShape {
    static constexpr int kCols = HD / 32;   // P·V columns per lane
    static constexpr int kChunks = HD / 8;  // 16-byte chunks per K row
    // Loads batched before their math: as many as the registers allow next to the R x kCols accumulators.
    static constexpr int kBatch = R * kCols >= 128 ? 4 : R * kCols > 32 ? 8 : 16;
    static constexpr int kKBatch = kBatch < kChunks ? kBatch : kChunks;
    static constexpr int kVBatch = kBatch;
};

// Shared memory of a W-warp block (floats): q [R][HD] and per-warp P [W][32][R] while walking keys;
// afterwards the same bytes hold the warps' m [W][R], l [W][R] and acc [W][R][HD] for the block merge.
template <int HD, int R, int W>
constexpr int decode_smem_bytes() {
    constexpr int walk = R * HD + W * kKeys * R, merge = W * R * (HD + 2);
    return 4 * (walk > merge ? walk : merge);
}

// Per-warp running softmax state of R rows: m (base-2 units, warp-uniform), l (this lane's share until
// the end of the walk) and acc (this lane's kCols columns).
template <int HD, int R>
struct WarpState {
    float m[R], l[R], acc[R][HD / 32];
};

// s[r] += q_s[r] . K row (q pre-scaled by scale * log2 e); the K row's 16-byte chunks are loaded in batches
// before their math so that many loads are in flight.
template <int HD, int R>
__device__ __forceinline__ void qk_dot(const uint16_t* krow, bool valid, const float* q_s, float (&s)[R]) {
    using S = DecodeShape<HD, R>;
    const uint4* k4 = reinterpret_cast<const uint4*>(krow);
#pragma unroll
    for (int c0 = 0; c0 < S::kChunks; c0 += S::kKBatch) {
        uint4 kr[S::kKBatch];
#pragma unroll
        for (int i = 0; i < S::kKBatch; ++i) kr[i] = valid ? __ldg(k4 + c0 + i) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int i = 0; i < S::kKBatch; ++i) {
            float kf[8];
            unpack_bf16(kr[i], kf);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const float4* qv = reinterpret_cast<const float4*>(q_s + r * HD + (c0 + i) * 8);
                const float4 a = qv[0], b = qv[1];
                float t = s[r];
                t = fmaf(a.x, kf[0], t), t = fmaf(a.y, kf[1], t), t = fmaf(a.z, kf[2], t), t = fmaf(a.w, kf[3], t);
                t = fmaf(b.x, kf[4], t), t = fmaf(b.y, kf[5], t), t = fmaf(b.z, kf[6], t), t = fmaf(b.w, kf[7], t);
                s[r] = t;
            }
        }
    }
}

// Whether a shape takes the coalesced Q·K: 16 lanes x 8 columns cover a 128-wide row, and R rows x 16 keys of
// partial dot products stay in registers up to R = 4.
template <int HD, int R>
constexpr bool kCoalescedQk = HD == 128 && R <= 4;

// Q·K of one 32-key sub-tile, coalesced (kCoalescedQk shapes): half-warp h loads keys 16 h .. 16 h + 15 of the
// sub-tile a whole 256-byte row per load instruction (lane sub = lane & 15 takes columns [8 sub, 8 sub + 8),
// whose q values qr holds in registers), so one instruction touches 4 cache lines instead of 32 rows. Each lane
// then holds 16 partial sums per row; a reduce-scatter over the half-warp (exchange half of them with lane ^ 8,
// ^ 4, ^ 2, ^ 1, keeping the other half) leaves the full score of key `lane` in each lane — the layout of
// qk_dot, which the softmax and P·V expect. Keys from n_valid on read zeros (their scores are masked later).
template <int R>
__device__ __forceinline__ void qk_coalesced(const uint16_t* k_head, int64_t slot_stride, int32_t slot, int n_valid,
                                             const float (&qr)[R][8], float (&s)[R]) {
    const int lane = threadIdx.x & 31, half = lane >> 4, sub = lane & 15;
    float part[R][16];
#pragma unroll
    for (int j0 = 0; j0 < 16; j0 += 8) {
        uint4 kr[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int key = half * 16 + j0 + i;
            const int32_t sj = __shfl_sync(kFull, slot, key);
            kr[i] = key < n_valid ? __ldg(reinterpret_cast<const uint4*>(k_head + int64_t(sj) * slot_stride) + sub)
                                  : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            float kf[8];
            unpack_bf16(kr[i], kf);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                float t = qr[r][0] * kf[0];
#pragma unroll
                for (int c = 1; c < 8; ++c) t = fmaf(qr[r][c], kf[c], t);
                part[r][j0 + i] = t;
            }
        }
    }
    const bool b8 = sub & 8, b4 = sub & 4, b2 = sub & 2, b1 = sub & 1;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float v8[8], v4[4], v2[2];
#pragma unroll
        for (int i = 0; i < 8; ++i)
            v8[i] = (b8 ? part[r][i + 8] : part[r][i]) + __shfl_xor_sync(kFull, b8 ? part[r][i] : part[r][i + 8], 8);
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v4[i] = (b4 ? v8[i + 4] : v8[i]) + __shfl_xor_sync(kFull, b4 ? v8[i] : v8[i + 4], 4);
#pragma unroll
        for (int i = 0; i < 2; ++i)
            v2[i] = (b2 ? v4[i + 2] : v4[i]) + __shfl_xor_sync(kFull, b2 ? v4[i] : v4[i + 2], 2);
        s[r] = (b1 ? v2[1] : v2[0]) + __shfl_xor_sync(kFull, b1 ? v2[0] : v2[1], 1);
    }
}

// acc[r][c] += sum_j P[j][r] * V[key j][lane's columns] over the sub-tile's n_valid keys; the slot of key j
// comes from lane j (which resolved its page for Q·K). P of keys past n_valid is 0 and their V loads are
// skipped (zeros), so pool contents there (possibly NaN) never reach acc.
template <int HD, int R>
__device__ __forceinline__ void pv_accumulate(const uint16_t* v_head, int32_t slot, int64_t slot_stride, int n_valid,
                                              const float* p_w, int lane, float (&acc)[R][HD / 32]) {
    using S = DecodeShape<HD, R>;
    using Raw = typename RawCols<S::kCols>::Type;
    for (int j0 = 0; j0 < n_valid; j0 += S::kVBatch) {
        Raw vr[S::kVBatch];
#pragma unroll
        for (int i = 0; i < S::kVBatch; ++i) {
            const int j = j0 + i;  // < 32: j0 is a multiple of the batch and below n_valid <= 32
            const int32_t sj = __shfl_sync(kFull, slot, j);
            vr[i] =
                j < n_valid ? __ldg(reinterpret_cast<const Raw*>(v_head + int64_t(sj) * slot_stride) + lane) : Raw{};
        }
#pragma unroll
        for (int i = 0; i < S::kVBatch; ++i) {
            float vf[S::kCols];
            unpack_bf16(vr[i], vf);
            const float* pj = p_w + (j0 + i) * R;
            float w[R];
            if constexpr (R % 4 == 0) {
#pragma unroll
                for (int r = 0; r < R; r += 4) {
                    const float4 f = *reinterpret_cast<const float4*>(pj + r);
                    w[r] = f.x, w[r + 1] = f.y, w[r + 2] = f.z, w[r + 3] = f.w;
                }
            } else {
#pragma unroll
                for (int r = 0; r < R; ++r) w[r] = pj[r];
            }
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int c = 0; c < S::kCols; ++c) acc[r][c] = fmaf(w[r], vf[c], acc[r][c]);
        }
    }
}

struct ItemView {
    int kv_begin, kv_end;  // keys of this item, kv_end clamped to the sequence's length
    const int32_t* pages;  // the sequence's page table
    int page_size;
    const uint16_t* k_head;  // pools offset to this KV head
    const uint16_t* v_head;
    int64_t slot_stride;  // elements between consecutive slots: n_kv_heads * head_dim
};

// One warp's walk over its interleaved sub-tiles (keys kv_begin + (warp + W * i) * 32 + lane).
// The page of this lane's first key (kv_begin + warp * 32 + lane), 0 past kv_end.
__device__ __forceinline__ int32_t first_page(const ItemView& v) {
    const int key = v.kv_begin + (threadIdx.x >> 5) * kKeys + (threadIdx.x & 31);
    return key < v.kv_end ? __ldg(v.pages + key / v.page_size) : 0;
}

template <int HD, int R, int W, bool Co>
__device__ __forceinline__ void warp_walk(const ItemView& v, int32_t page, const int (&q_pos)[R], const float* q_s,
                                          float* p_w, WarpState<HD, R>& st) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float qr[Co ? R : 1][8];  // coalesced Q·K: this lane's 8 columns of every row of q
    if constexpr (Co) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int c = 0; c < 8; ++c) qr[r][c] = q_s[r * HD + (lane & 15) * 8 + c];
    }
    int key = v.kv_begin + warp * kKeys + lane;
    for (int base = v.kv_begin + warp * kKeys; base < v.kv_end; base += W * kKeys, key += W * kKeys) {
        const bool valid = key < v.kv_end;
        const int32_t slot = page * v.page_size + key % v.page_size;
        const int next = key + W * kKeys;  // the next sub-tile's page load overlaps this one's work
        page = next < v.kv_end ? __ldg(v.pages + next / v.page_size) : 0;
        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
        if constexpr (Co)
            qk_coalesced<R>(v.k_head, v.slot_stride, slot, min(kKeys, v.kv_end - base), qr, s);
        else
            qk_dot<HD, R>(v.k_head + int64_t(slot) * v.slot_stride, valid, q_s, s);
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
        pv_accumulate<HD, R>(v.v_head, slot, v.slot_stride, min(kKeys, v.kv_end - base), p_w, lane, st.acc);
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
    __syncthreads();  // every warp is done with q_s / P, which these buffers overlay
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
template <int HD>
__device__ __forceinline__ void merge_if_last(const AttentionParams& p, const AttentionMergeGroup* groups,
                                              const AttentionWorkItem& it, const float* ws, const RowSink& sink) {
    __shared__ int last;
    __threadfence();  // this block's partial is visible device-wide before it counts itself in
    __syncthreads();
    const AttentionMergeGroup g = groups[it.merge_group];
    if (threadIdx.x == 0) {
        int32_t* counter = p.merge_counters + int64_t(it.merge_group) * p.n_kv_heads + sink.kvh;
        last = atomicAdd(counter, 1) == g.item_end - g.item_begin - 1;
        if (last) atomicExch(counter, 0);  // every block of the group has counted: ready for the next launch
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int idx = threadIdx.x; idx < sink.tile_rows * HD; idx += blockDim.x) {
        const int r = idx / HD, d = idx - r * HD;
        auto part = [&](int item) {
            return ws + ((int64_t(item) * p.n_kv_heads + sink.kvh) * kAttentionTileRows + r) * (HD + 2);
        };
        // Items in chunks of kMergeChunk whose loads are all issued before their math: one L2 round trip per
        // chunk and pass instead of one per item.
        float mx = -INFINITY;
        for (int i0 = g.item_begin; i0 < g.item_end; i0 += kMergeChunk) {
            float m[kMergeChunk];
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) m[k] = i0 + k < g.item_end ? __ldcg(part(i0 + k)) : -INFINITY;
#pragma unroll
            for (int k = 0; k < kMergeChunk; ++k) mx = fmaxf(mx, m[k]);
        }
        float l = 0.0f, a = 0.0f;
        if (mx != -INFINITY)
            for (int i0 = g.item_begin; i0 < g.item_end; i0 += kMergeChunk) {
                float m[kMergeChunk], li[kMergeChunk], ai[kMergeChunk];
#pragma unroll
                for (int k = 0; k < kMergeChunk; ++k) {
                    const bool in = i0 + k < g.item_end;
                    const float* pi = part(i0 + k);
                    m[k] = in ? __ldcg(pi) : -INFINITY, li[k] = in ? __ldcg(pi + 1) : 0.0f;
                    ai[k] = in ? __ldcg(pi + 2 + d) : 0.0f;
                }
#pragma unroll
                for (int k = 0; k < kMergeChunk; ++k) {
                    const float w = m[k] == -INFINITY ? 0.0f : expf(m[k] - mx);
                    l = fmaf(w, li[k], l), a = fmaf(w, ai[k], a);
                }
            }
        const int row = sink.row_begin + r, tok = row / sink.group, h = sink.kvh * sink.group + row % sink.group;
        __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(p.out) + int64_t(sink.q_begin + tok) * p.n_heads * HD +
                             int64_t(h) * HD + d;
        *out = __float2bfloat16_rn(l > 0.0f ? a / l : 0.0f);
    }
}

template <int HD, int R, int W, bool Co>
__global__ void __launch_bounds__(32 * W)
    attention_decode_kernel(AttentionParams p, const AttentionWorkItem* items, const AttentionMergeGroup* groups,
                            float* ws, bool direct) {
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    float* q_s = smem;                                            // [R][HD], scaled by scale * log2 e
    float* p_w = smem + R * HD + (threadIdx.x >> 5) * kKeys * R;  // this warp's P [32][R]
    const AttentionWorkItem it = items[blockIdx.x];
    const int kvh = blockIdx.y, group = p.n_heads / p.n_kv_heads;
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
    {  // this lane's first key's K and V rows into L2 (an L2 prefetch is safe even for the slot the predecessor
       // writes: L2 is where its write lands)
        const int key = v.kv_begin + (threadIdx.x >> 5) * kKeys + (threadIdx.x & 31);
        if (key < v.kv_end) {
            const int64_t off = int64_t(page0 * v.page_size + key % v.page_size) * v.slot_stride;
#pragma unroll
            for (int c = 0; c < HD; c += 64)
                detail::prefetch_l2(v.k_head + off + c), detail::prefetch_l2(v.v_head + off + c);
        }
    }
    detail::pdl_wait();
    // Rows of the tile: token_in_seq * group + head_in_group. Decode has one pass (R >= group rows); tiles
    // of several tokens (not decode) still come out right, in several passes.
    const int tile_rows = min(kAttentionTileRows, n_q * group - it.row_begin);
    const RowSink sink{
        direct ? nullptr : ws + (int64_t(blockIdx.x) * p.n_kv_heads + kvh) * kAttentionTileRows * (HD + 2),
        &p,
        q_begin,
        kvh,
        it.row_begin,
        tile_rows,
        group};
    for (int r0 = 0; r0 < tile_rows; r0 += R) {
        __syncthreads();  // the previous pass's merge is done with the buffers q_s overlays
        for (int idx = threadIdx.x; idx < R * HD; idx += 32 * W) {
            const int r = idx / HD, d = idx - r * HD, row = it.row_begin + r0 + r;
            float x = 0.0f;
            if (r0 + r < tile_rows) {
                const int tok = row / group, h = kvh * group + row % group;
                const uint16_t* q = p.q + int64_t(q_begin + tok) * p.q_row_stride + int64_t(h) * HD + d;
                x = __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(q)) * (p.scale * kLog2e);
            }
            q_s[idx] = x;
        }
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
        __syncthreads();
        warp_walk<HD, R, W, Co>(v, page0, q_pos, q_s, p_w, st);
        block_merge_write<HD, R, W>(st, smem, sink, r0);
    }
    // Only split launches (4 warps) merge; the whole-sequence kernels (8 warps) never carry the merge code.
    if constexpr (W == kSplitWarps) {
        if (!direct && p.merge_counters) merge_if_last<HD>(p, groups, it, ws, sink);
    }
}

// One launch's arguments, passed down the shape dispatch.
struct DecodeLaunch {
    const AttentionParams* p;
    const AttentionWorkItem* items;
    int n_items;
    const AttentionMergeGroup* groups;
    float* ws;
    bool direct;  // every item is its row tile's only one (no split)
    detail::DecodeQkLayout layout;
    cudaStream_t stream;
};

template <int HD, int R, int W, bool Co>
cudaError_t launch_decode_warps(const DecodeLaunch& l) {
    constexpr int smem = decode_smem_bytes<HD, R, W>();
    if constexpr (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(attention_decode_kernel<HD, R, W, Co>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return e;
    }
    return detail::launch(attention_decode_kernel<HD, R, W, Co>, dim3(l.n_items, l.p->n_kv_heads), 32 * W, smem,
                          l.stream, *l.p, l.items, l.groups, l.ws, l.direct);
}

// direct -> 8 warps writing the output; else 4 + partials.
template <int HD, int R, bool Co>
cudaError_t launch_decode_layout(const DecodeLaunch& l) {
    return l.direct ? launch_decode_warps<HD, R, kWholeWarps, Co>(l) : launch_decode_warps<HD, R, kSplitWarps, Co>(l);
}

// Blocks of one instantiation that an SM holds at once (registers and shared memory decide; cached).
template <int HD, int R, int W, bool Co>
int resident_blocks() {
    static const int n = [] {
        int b = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, attention_decode_kernel<HD, R, W, Co>, 32 * W,
                                                          decode_smem_bytes<HD, R, W>()) != cudaSuccess)
            cudaGetLastError(), b = 1;
        return b > 0 ? b : 1;
    }();
    return n;
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

template <int HD, int R>
cudaError_t launch_decode(const DecodeLaunch& l) {
    if constexpr (kCoalescedQk<HD, R>) {
        using detail::DecodeQkLayout;
        if (l.layout == DecodeQkLayout::coalesced ||
            (l.layout == DecodeQkLayout::automatic &&
             (l.direct ? coalesced_pays<HD, R, kWholeWarps>(l) : coalesced_pays<HD, R, kSplitWarps>(l))))
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

}  // namespace

namespace detail {

cudaError_t attention_decode_with(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                                  const AttentionMergeGroup* groups, int n_groups, float* workspace,
                                  DecodeQkLayout layout, cudaStream_t stream) {
    if (!attention_decode_supported(p)) return cudaErrorInvalidValue;
    if (n_items == 0) return cudaSuccess;
    const int group = p.n_heads / p.n_kv_heads;
    // As many items as merge groups: each group (row tile) has exactly one item spanning its whole causal
    // horizon, so the block can normalise and write the output itself.
    const bool direct = n_items == n_groups;
    const DecodeLaunch l{&p, items, n_items, groups, workspace, direct, layout, stream};
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
    if (e != cudaSuccess || direct || p.merge_counters) return e;
    return detail::attention_merge(p, groups, n_groups, workspace, stream);
}

}  // namespace detail

cudaError_t attention_decode(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                             const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream) {
    return detail::attention_decode_with(p, items, n_items, groups, n_groups, workspace,
                                         detail::DecodeQkLayout::automatic, stream);
}

bool attention_decode_supported(const AttentionParams& p) {
    if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) return false;
    if (p.n_kv_heads <= 0 || p.n_heads <= 0 || p.n_heads % p.n_kv_heads != 0) return false;
    if (p.n_heads / p.n_kv_heads > kAttentionTileRows || p.page_size <= 0) return false;
    // 16-byte K loads and 4..16-byte V loads straight from the pools.
    return reinterpret_cast<uintptr_t>(p.k_pages) % 16 == 0 && reinterpret_cast<uintptr_t>(p.v_pages) % 16 == 0;
}

}  // namespace loradesk::kernels
