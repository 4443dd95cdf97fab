// Decode-specialised paged attention (issue #8): same AttentionParams, plan and f32 partial layout as
// attention() in attention.cu, followed by the same merge kernel. A block takes one work item of one KV head
// and all query rows of its tile (the GQA group of the one new token); its 4 warps walk interleaved 32-key
// sub-tiles where each lane owns a key for Q·K (16-byte K loads, page resolved once per key) and head_dim/32
// columns for P·V (coalesced V rows), with an online softmax per warp; the warps' (m, l, acc) are merged
// through shared memory before the partial is written. head_dim 64/128/256, group <= 16.
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
template <int HD, int R, int W>
__device__ __forceinline__ void warp_walk(const ItemView& v, const int (&q_pos)[R], const float* q_s, float* p_w,
                                          WarpState<HD, R>& st) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int key = v.kv_begin + warp * kKeys + lane;
    int32_t page = key < v.kv_end ? __ldg(v.pages + key / v.page_size) : 0;
    for (int base = v.kv_begin + warp * kKeys; base < v.kv_end; base += W * kKeys, key += W * kKeys) {
        const bool valid = key < v.kv_end;
        const int32_t slot = page * v.page_size + key % v.page_size;
        const int next = key + W * kKeys;  // the next sub-tile's page load overlaps this one's work
        page = next < v.kv_end ? __ldg(v.pages + next / v.page_size) : 0;
        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.0f;
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

template <int HD, int R, int W>
__global__ void __launch_bounds__(32 * W)
    attention_decode_kernel(AttentionParams p, const AttentionWorkItem* items, float* ws, bool direct) {
    detail::pdl_wait();
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
        warp_walk<HD, R, W>(v, q_pos, q_s, p_w, st);
        block_merge_write<HD, R, W>(st, smem, sink, r0);
    }
}

template <int HD, int R, int W>
cudaError_t launch_decode_warps(const AttentionParams& p, const AttentionWorkItem* items, int n_items, float* ws,
                                bool direct, cudaStream_t stream) {
    constexpr int smem = decode_smem_bytes<HD, R, W>();
    if constexpr (smem > 48 * 1024) {
        cudaError_t e =
            cudaFuncSetAttribute(attention_decode_kernel<HD, R, W>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return e;
    }
    return detail::launch(attention_decode_kernel<HD, R, W>, dim3(n_items, p.n_kv_heads), 32 * W, smem, stream, p,
                          items, ws, direct);
}

// direct: every item is its row tile's only one (no split) -> 8 warps writing the output; else 4 + partials.
template <int HD, int R>
cudaError_t launch_decode(const AttentionParams& p, const AttentionWorkItem* items, int n_items, float* ws, bool direct,
                          cudaStream_t stream) {
    return direct ? launch_decode_warps<HD, R, kWholeWarps>(p, items, n_items, ws, true, stream)
                  : launch_decode_warps<HD, R, kSplitWarps>(p, items, n_items, ws, false, stream);
}

template <int HD>
cudaError_t launch_decode_rows(const AttentionParams& p, int group, const AttentionWorkItem* items, int n_items,
                               float* ws, bool direct, cudaStream_t stream) {
    if (group <= 1) return launch_decode<HD, 1>(p, items, n_items, ws, direct, stream);
    if (group <= 2) return launch_decode<HD, 2>(p, items, n_items, ws, direct, stream);
    if (group <= 4) return launch_decode<HD, 4>(p, items, n_items, ws, direct, stream);
    // 16 rows x 8 columns of accumulators would spill at head_dim 256: two passes of 8 rows instead.
    if constexpr (HD > 128) {
        return launch_decode<HD, 8>(p, items, n_items, ws, direct, stream);
    } else {
        if (group <= 8) return launch_decode<HD, 8>(p, items, n_items, ws, direct, stream);
        return launch_decode<HD, 16>(p, items, n_items, ws, direct, stream);
    }
}

}  // namespace

cudaError_t attention_decode(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                             const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream) {
    if (!attention_decode_supported(p)) return cudaErrorInvalidValue;
    if (n_items == 0) return cudaSuccess;
    const int group = p.n_heads / p.n_kv_heads;
    // As many items as merge groups: each group (row tile) has exactly one item spanning its whole causal
    // horizon, so the block can normalise and write the output itself.
    const bool direct = n_items == n_groups;
    cudaError_t e = cudaErrorInvalidValue;
    switch (p.head_dim) {
        case 64:
            e = launch_decode_rows<64>(p, group, items, n_items, workspace, direct, stream);
            break;
        case 128:
            e = launch_decode_rows<128>(p, group, items, n_items, workspace, direct, stream);
            break;
        case 256:
            e = launch_decode_rows<256>(p, group, items, n_items, workspace, direct, stream);
            break;
        default:
            break;
    }
    if (e != cudaSuccess || direct) return e;
    return detail::attention_merge(p, groups, n_groups, workspace, stream);
}

bool attention_decode_supported(const AttentionParams& p) {
    if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) return false;
    if (p.n_kv_heads <= 0 || p.n_heads <= 0 || p.n_heads % p.n_kv_heads != 0) return false;
    if (p.n_heads / p.n_kv_heads > kAttentionTileRows || p.page_size <= 0) return false;
    // 16-byte K loads and 4..16-byte V loads straight from the pools.
    return reinterpret_cast<uintptr_t>(p.k_pages) % 16 == 0 && reinterpret_cast<uintptr_t>(p.v_pages) % 16 == 0;
}

}  // namespace loradesk::kernels
