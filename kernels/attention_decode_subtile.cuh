// One warp's work on one 32-key sub-tile of paged K / V for the decode attention kernel (attention_decode.cu): the
// scores Q·K (one lane per key, or coalesced whole-row loads at head_dim 128), the weighted sum P·V, and for staged
// launches the first sub-tile copied into shared memory before the PDL wait and walked on tensor cores. The walk,
// its softmax and the block's merge stay in attention_decode.cu. Private to kernels/.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "mma_bf16.cuh"

namespace loradesk::kernels::detail {

constexpr int kKeys = 32;  // keys per warp sub-tile: one per lane
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

// Staged sub-tiles' shared-memory strides: q in bf16 [8][kQbStride] and each warp's P in bf16 [8][kPStride], padded so
// that ldmatrix's 8 rows fall on distinct banks (attention_decode.cu lays out the rest).
constexpr int kQbStride = 128 + 8;
constexpr int kPStride = kKeys + 8;

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

// A K or V row chunk through L2 (ld.global.cg) when ViaL2, for the rows of the key this block wrote itself (the
// RoPE-fused kernel's fresh key), which the read-only path need not see; otherwise through the read-only path
// (ld.global.nc), which streams the pools faster. A template argument, not a run-time select: with a select ptxas
// issues both loads predicated and merges them with moves that wait on each load at once, and the RoPE-fused MHA
// kernel ran 344 instead of 317 us per layer (Llama-7B batch 128, Nsight Compute, twenty-second session).
template <bool ViaL2, class T>
__device__ __forceinline__ T load_kv(const T* p) {
    if constexpr (ViaL2)
        return __ldcg(p);
    else
        return __ldg(p);
}

// Row `slot` of a pool head at byte offset `col_bytes` into the row: one 32 x 32 -> 64-bit multiply-add per key
// (IMAD.WIDE.U32, then the head pointer added), where int64 slot x int64 stride took eight integer instructions. Slots
// are non-negative int32 and a slot's bytes (n_kv_heads x head_dim x 2) fit 32 bits. (A mad.wide.u32 that takes the
// head pointer too, and a one-instruction bf16 unpack, cut instructions further and ran slower: Llama-7B batch 128
// 14.174 / 14.184 against 14.125 / 14.087 ms per step, the MHA kernel 296.9 against 291.5 us, twenty-second session.)
template <class T>
__device__ __forceinline__ const T* pool_row(const uint16_t* head, uint32_t stride_bytes, int32_t slot, int col_bytes) {
    return reinterpret_cast<const T*>(reinterpret_cast<const char*>(head) + col_bytes +
                                      uint64_t(uint32_t(slot)) * stride_bytes);
}

// Q·K of one 32-key sub-tile, coalesced (kCoalescedQk shapes): half-warp h loads keys 16 h .. 16 h + 15 of the
// sub-tile a whole 256-byte row per load instruction (lane sub = lane & 15 takes columns [8 sub, 8 sub + 8),
// whose q values qr holds in registers), so one instruction touches 4 cache lines instead of 32 rows. Each lane
// then holds 16 partial sums per row; a reduce-scatter over the half-warp (exchange half of them with lane ^ 8,
// ^ 4, ^ 2, ^ 1, keeping the other half) leaves the full score of key `lane` in each lane — the layout of
// qk_dot, which the softmax and P·V expect. Lanes past the sub-tile's last key hold that key's slot (warp_walk), so
// every load reads a real row unconditionally: their scores are masked later, and a predicated load cost a zero fill
// and a move per register (the MHA walk's SASS, twenty-second session).
template <int R, bool ViaL2>
__device__ __forceinline__ void qk_coalesced(const uint16_t* k_head, uint32_t stride_bytes, int32_t slot,
                                             const float (&qr)[R][8], float (&s)[R]) {
    const int lane = threadIdx.x & 31, half = lane >> 4, sub = lane & 15;
    float part[R][16];
#pragma unroll
    for (int j0 = 0; j0 < 16; j0 += 8) {
        uint4 kr[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int32_t sj = __shfl_sync(kFull, slot, half * 16 + j0 + i);
            const uint4* row = pool_row<uint4>(k_head, stride_bytes, sj, sub * 16);
            kr[i] = load_kv<ViaL2>(row);
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
// comes from lane j (which resolved its page for Q·K). Lanes past n_valid hold the last valid key's slot
// (warp_walk), so the batch that straddles n_valid reads that real row again, unconditionally, with P 0: pool
// contents past the sequence (possibly NaN) never reach acc. ViaL2: as in load_kv.
template <int HD, int R, bool ViaL2>
__device__ __forceinline__ void pv_accumulate(const uint16_t* v_head, int32_t slot, uint32_t stride_bytes, int n_valid,
                                              const float* p_w, int lane, float (&acc)[R][HD / 32]) {
    using S = DecodeShape<HD, R>;
    using Raw = typename RawCols<S::kCols>::Type;
    for (int j0 = 0; j0 < n_valid; j0 += S::kVBatch) {
        Raw vr[S::kVBatch];
#pragma unroll
        for (int i = 0; i < S::kVBatch; ++i) {
            // < 32: j0 is a multiple of the batch and below n_valid <= 32
            const int32_t sj = __shfl_sync(kFull, slot, j0 + i);
            const Raw* row = pool_row<Raw>(v_head, stride_bytes, sj, lane * int(sizeof(Raw)));
            vr[i] = load_kv<ViaL2>(row);
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

// Staging (St): before the PDL wait, each warp copies the K and V rows of its first sub-tile into shared memory
// with cp.async (row j of the sub-tile at k_st + staged_off(j, 0)), so the walk's first sub-tile after the wait is
// read from shared memory, on tensor cores (staged_subtile_mma), instead of in two to four L2 / DRAM round trips. Keys
// from fresh_begin on (this step's own tokens) are written by the predecessor (RoPE + KV write), so they are copied
// only after the wait; every other key was written by an earlier step, and every kernel before the predecessor has
// completed when this grid starts (each kernel releases its dependents only after its own wait). Coalesced layout
// (head_dim 128) only.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Element e of staged row j: 256-byte rows whose 16-byte chunks are XOR-swizzled by j & 7, so that ldmatrix's 8
// consecutive rows of one chunk column fall on distinct banks.
__device__ __forceinline__ int staged_off(int j, int e) { return j * 128 + ((((e >> 3) ^ (j & 7)) << 3) | (e & 7)); }

// Copies the rows of this warp's first sub-tile whose keys are fresh (>= fresh_begin) or not, as asked; the first
// call also zeroes the rows past kv_end (P is 0 there, and 0 x a stale NaN would be NaN in the tensor-core P·V).
// Lane takes 16-byte chunk (lane & 15) of rows (lane >> 4) + 2 i; row j's slot comes from lane j.
__device__ __forceinline__ void stage_first_subtile(const ItemView& v, int32_t page, int fresh_begin, bool fresh,
                                                    uint16_t* k_st, uint16_t* v_st) {
    const int lane = threadIdx.x & 31, base = v.kv_begin + (threadIdx.x >> 5) * kKeys;
    const int32_t slot = page * v.page_size + (base + lane) % v.page_size;
    const int chunk = (lane & 15) * 8;
#pragma unroll
    for (int i = 0; i < kKeys / 2; ++i) {
        const int j = 2 * i + (lane >> 4), key = base + j;
        const int32_t sj = __shfl_sync(kFull, slot, j);
        if (key < v.kv_end && (key >= fresh_begin) == fresh) {
            const int64_t off = int64_t(sj) * v.slot_stride + chunk;
            cp_async16(k_st + staged_off(j, chunk), v.k_head + off);
            cp_async16(v_st + staged_off(j, chunk), v.v_head + off);
        } else if (key >= v.kv_end && !fresh) {
            *reinterpret_cast<uint4*>(k_st + staged_off(j, chunk)) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(v_st + staged_off(j, chunk)) = make_uint4(0, 0, 0, 0);
        }
    }
}

// Copies every row of the warp's sub-tile of keys base .. base + 31 (lane L's key base + L lies in page `page`) into
// the staging buffers and zeroes the rows past kv_end, for the walk on tensor cores past the first sub-tile (Mw).
// Issued after the PDL wait: fresh keys included. The caller waits (cp_async_wait_all, __syncwarp) before reading.
__device__ __forceinline__ void stage_subtile(const ItemView& v, int base, int32_t page, uint16_t* k_st,
                                              uint16_t* v_st) {
    const int lane = threadIdx.x & 31;
    const int32_t slot = page * v.page_size + (base + lane) % v.page_size;
    const int chunk = (lane & 15) * 8;
#pragma unroll
    for (int i = 0; i < kKeys / 2; ++i) {
        const int j = 2 * i + (lane >> 4);
        const int32_t sj = __shfl_sync(kFull, slot, j);
        if (base + j < v.kv_end) {
            const int64_t off = int64_t(sj) * v.slot_stride + chunk;
            cp_async16(k_st + staged_off(j, chunk), v.k_head + off);
            cp_async16(v_st + staged_off(j, chunk), v.v_head + off);
        } else {
            *reinterpret_cast<uint4*>(k_st + staged_off(j, chunk)) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(v_st + staged_off(j, chunk)) = make_uint4(0, 0, 0, 0);
        }
    }
}

// The staged sub-tile's operands beyond K and V: q rows 0..7 unscaled in bf16 (rows past the group zero), this
// warp's P buffer, and the scale of the scores (scale * log2 e, applied to q's f32 copy elsewhere).
struct StagedMma {
    const uint16_t* q_bf;  // [8][kQbStride]
    uint16_t* p_bf;        // [8][kPStride]
    float* o_t;            // [R][128]: the warp's K buffer (k_st), which Q·K has read by the time O^T is written
    float q_scale;
};

// The warp's first sub-tile (keys first .. first + n_valid - 1, staged) on tensor cores, into a fresh walk state.
// Both products put the short dimension (the <= 8 query rows) in the mma's n: S^T = K q^T (2 key blocks x 8 head_dim
// steps) and O^T = V^T P^T (8 column blocks x 2 key steps), 32 mma per warp instead of ~2,000 dependent FMA,
// shuffle and load instructions on one warp per scheduler (H100 probe, Qwen3-8B: 4-6 us per sub-tile). P is
// rounded to bf16 for P·V and l sums the rounded values, so the normalisation matches what was accumulated. O^T
// goes through shared memory into st's layout (lane L: columns 4 L .. 4 L + 3).
template <int R>
__device__ __forceinline__ void staged_subtile_mma(const uint16_t* k_st, const uint16_t* v_st, const StagedMma& mm,
                                                   int n_valid, int first, const int (&q_pos)[R],
                                                   WarpState<128, R>& st) {
    static_assert(R <= 8, "query rows are the mma's n (8)");
    const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3, lm = lane >> 3, lr = lane & 7;
    uint32_t qb[8][2];  // B fragments of q^T, 8 steps of 16 head_dim columns
#pragma unroll
    for (int kk = 0; kk < 8; kk += 2) {
        uint32_t r[4];
        detail::ldmatrix_x4(r, mm.q_bf + lr * kQbStride + kk * 16 + lm * 8);
        qb[kk][0] = r[0], qb[kk][1] = r[1], qb[kk + 1][0] = r[2], qb[kk + 1][1] = r[3];
    }
    float s[2][4];  // S^T: keys 16 mt + g (+8), rows 2c, 2c + 1
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s[mt][i] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            uint32_t a[4];
            detail::ldmatrix_x4(a, k_st + staged_off(mt * 16 + (lm & 1) * 8 + lr, kk * 16 + (lm >> 1) * 8));
            detail::mma_bf16(s[mt], a, qb[kk][0], qb[kk][1]);
        }
    }
    int qp[2] = {-1, -1};  // positions of rows 2c, 2c + 1 (-1: a row past the tile or the group)
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (r >> 1 == c) qp[r & 1] = q_pos[r];
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int key = mt * 16 + g + (i >> 1) * 8;
            const bool valid = key < n_valid && first + key <= qp[i & 1];
            s[mt][i] = valid ? s[mt][i] * mm.q_scale : -INFINITY;
            mx[i & 1] = fmaxf(mx[i & 1], s[mt][i]);
        }
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) mx[h] = fmaxf(mx[h], __shfl_xor_sync(kFull, mx[h], o));
    float l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int h = i & 1, key = mt * 16 + g + (i >> 1) * 8;
            const __nv_bfloat16 pb = __float2bfloat16_rn(s[mt][i] == -INFINITY ? 0.0f : exp2f(s[mt][i] - mx[h]));
            l[h] += __bfloat162float(pb);
            mm.p_bf[(2 * c + h) * kPStride + key] = __bfloat16_as_ushort(pb);
        }
    __syncwarp();
    uint32_t pf[4];  // B fragments of P^T: keys 0-15 (pf[0], pf[1]) and 16-31 (pf[2], pf[3])
    detail::ldmatrix_x4(pf, mm.p_bf + lr * kPStride + lm * 8);
    float o[8][4];  // O^T: columns 16 mt + g (+8), rows 2c, 2c + 1
#pragma unroll
    for (int mt = 0; mt < 8; ++mt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) o[mt][i] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            uint32_t a[4];
            detail::ldmatrix_x4_trans(a, v_st + staged_off(kk * 16 + (lm >> 1) * 8 + lr, mt * 16 + (lm & 1) * 8));
            detail::mma_bf16(o[mt], a, pf[2 * kk], pf[2 * kk + 1]);
        }
    }
    // O^T over the sub-tile's K rows: this warp's ldmatrix reads of them are done (the mma above consumed them), and
    // the next sub-tile's copies into them come after the __syncwarp that follows these reads (warp_walk).
    float* scratch = mm.o_t;
#pragma unroll
    for (int mt = 0; mt < 8; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = 2 * c + (i & 1);
            if (row < R) scratch[row * 128 + mt * 16 + g + (i >> 1) * 8] = o[mt][i];
        }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float4 a4 = reinterpret_cast<const float4*>(scratch + r * 128)[lane];
        st.acc[r][0] = a4.x, st.acc[r][1] = a4.y, st.acc[r][2] = a4.z, st.acc[r][3] = a4.w;
        st.m[r] = __shfl_sync(kFull, (r & 1) ? mx[1] : mx[0], r >> 1);
        st.l[r] = c == r >> 1 ? ((r & 1) ? l[1] : l[0]) : 0.0f;
    }
}

// st, the walk so far, joined by t, one more sub-tile's (staged_subtile_mma): the online softmax's rescale of both
// to their common max. m is the same in every lane; l and acc stay per lane, as the walk keeps them.
template <int HD, int R>
__device__ __forceinline__ void join_walk_state(WarpState<HD, R>& st, const WarpState<HD, R>& t) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float m = fmaxf(st.m[r], t.m[r]);
        const float a = st.m[r] == -INFINITY ? 0.0f : exp2f(st.m[r] - m);  // -inf both: nothing seen, both 0
        const float b = t.m[r] == -INFINITY ? 0.0f : exp2f(t.m[r] - m);
        st.l[r] = st.l[r] * a + t.l[r] * b;
#pragma unroll
        for (int c = 0; c < HD / 32; ++c) st.acc[r][c] = st.acc[r][c] * a + t.acc[r][c] * b;
        st.m[r] = m;
    }
}

}  // namespace loradesk::kernels::detail
