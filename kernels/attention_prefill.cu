// Tensor-core paged prefill attention (FlashAttention-2 style): a block of 4 warps owns one PrefillTile
// (64 flattened rows = token x head-in-group of one sequence) for one KV head and streams 64-key tiles
// (32 at head_dim 256) of K and V from the pages into double-buffered shared memory with cp.async.
// S = Q K^T and O += P V run on mma.sync m16n8k16 bf16 -> f32; the softmax is online in registers and S's
// accumulators become P's A operand directly. No split-K: the block writes its rows of out. Plan: attention_plan.h.
#include <cuda_bf16.h>

#include <climits>
#include <cstdint>

#include "launch_pdl.cuh"
#include "launchers.h"
#include "mma_bf16.cuh"

namespace loradesk::kernels {
namespace {

using detail::ldmatrix_x4;
using detail::ldmatrix_x4_trans;
using detail::mma_bf16;
using detail::pack_bf16;
using detail::smem_addr;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRowsPerWarp = kPrefillTileRows / kWarps;  // 16 = one mma M
static_assert(kRowsPerWarp == 16, "one m16 mma row block per warp");
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct PrefillConfig {
    static constexpr int kKeys = D == 256 ? 32 : 64;  // 256: fewer S registers beside the 128 of O
    static constexpr int kStride = D + 8;             // padded smem row (bf16): ldmatrix rows hit distinct banks
    static constexpr bool kQInRegs = D <= 128;        // 256 re-reads Q fragments from smem to avoid spills
    static constexpr int kChunksPerRow = D / 8;       // 16-byte chunks
    static constexpr std::size_t kSmemBytes = std::size_t(kPrefillTileRows + 4 * kKeys) * kStride * 2;
    static_assert(kThreads % kChunksPerRow == 0 && (kKeys * kChunksPerRow) % kThreads == 0, "loader mapping");
};

// 16-byte async copy; when !valid nothing is read and the destination is zero-filled.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

struct TileView {
    int q_begin, n_q, kv_len, n_rows, group, kvh, row_begin;
    const int32_t* pages;
    __device__ int pos(int row) const { return kv_len - n_q + row / group; }  // KV position of a flattened row
};

__device__ TileView tile_view(const AttentionParams& p, PrefillTile tile, int kvh) {
    TileView v;
    v.q_begin = p.qo_indptr[tile.seq];
    v.n_q = p.qo_indptr[tile.seq + 1] - v.q_begin;
    int n_pages = p.kv_indptr[tile.seq + 1] - p.kv_indptr[tile.seq];
    v.kv_len = n_pages == 0 ? 0 : (n_pages - 1) * p.page_size + p.kv_last_page_len[tile.seq];
    v.group = p.n_heads / p.n_kv_heads;
    v.n_rows = v.n_q * v.group;
    v.kvh = kvh;
    v.row_begin = tile.row_begin;
    v.pages = p.kv_indices + p.kv_indptr[tile.seq];
    return v;
}

// Q rows of the tile into q_s [64][kStride]; rows past n_rows are zero.
template <int D>
__device__ void load_q_tile(const AttentionParams& p, const TileView& tv, bool q_vec, uint16_t* q_s) {
    using C = PrefillConfig<D>;
    if (q_vec) {
        for (int c = threadIdx.x; c < kPrefillTileRows * C::kChunksPerRow; c += kThreads) {
            int r = c / C::kChunksPerRow, part = c % C::kChunksPerRow, row = tv.row_begin + r;
            bool ok = row < tv.n_rows;
            const uint16_t* src = p.q;
            if (ok) {
                int tok = row / tv.group, h = tv.kvh * tv.group + row % tv.group;
                src = p.q + int64_t(tv.q_begin + tok) * p.q_row_stride + int64_t(h) * D + part * 8;
            }
            cp_async16(q_s + r * C::kStride + part * 8, src, ok);
        }
        return;
    }
    for (int idx = threadIdx.x; idx < kPrefillTileRows * D; idx += kThreads) {  // unaligned q rows
        int r = idx / D, d = idx % D, row = tv.row_begin + r;
        uint16_t x = 0;
        if (row < tv.n_rows) {
            int tok = row / tv.group, h = tv.kvh * tv.group + row % tv.group;
            x = p.q[int64_t(tv.q_begin + tok) * p.q_row_stride + int64_t(h) * D + d];
        }
        q_s[r * C::kStride + d] = x;
    }
}

// Keys [kv0, kv0 + kKeys) of this KV head into k_s/v_s [kKeys][kStride]; keys >= horizon are zero-filled
// (P is 0 there, but 0 * garbage could be NaN). Each thread resolves the page of the keys it copies.
template <int D>
__device__ void load_kv_tile(const AttentionParams& p, const TileView& tv, int kv0, int horizon, uint16_t* k_s,
                             uint16_t* v_s) {
    using C = PrefillConfig<D>;
    constexpr int kKeysPerPass = kThreads / C::kChunksPerRow;
    const int part = threadIdx.x % C::kChunksPerRow;
#pragma unroll
    for (int j = threadIdx.x / C::kChunksPerRow; j < C::kKeys; j += kKeysPerPass) {
        int key = kv0 + j;
        bool ok = key < horizon;
        int64_t off = 0;
        if (ok) {
            int64_t slot = int64_t(tv.pages[key / p.page_size]) * p.page_size + key % p.page_size;
            off = (slot * p.n_kv_heads + tv.kvh) * D + part * 8;
        }
        cp_async16(k_s + j * C::kStride + part * 8, p.k_pages + off, ok);
        cp_async16(v_s + j * C::kStride + part * 8, p.v_pages + off, ok);
    }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_prefill_kernel(AttentionParams p, const PrefillTile* tiles, bool q_vec) {
    detail::pdl_wait();
    using C = PrefillConfig<D>;
    constexpr int BK = C::kKeys, S = C::kStride;
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t* q_s = smem;                          // [64][S]
    uint16_t* k_buf = q_s + kPrefillTileRows * S;  // [2][BK][S]
    uint16_t* v_buf = k_buf + 2 * BK * S;          // [2][BK][S]

    const int kvh = blockIdx.x % p.n_kv_heads;
    const TileView tv = tile_view(p, tiles[blockIdx.x / p.n_kv_heads], kvh);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int last_row = min(tv.row_begin + kPrefillTileRows, tv.n_rows) - 1;
    const int horizon = last_row < tv.row_begin ? 0 : max(tv.pos(last_row) + 1, 0);
    const int n_kt = (horizon + BK - 1) / BK;

    // This warp's rows: the thread holds rows g and g + 8 of the warp's 16. pos -1: nothing visible.
    const int wrow0 = tv.row_begin + warp * kRowsPerWarp;
    int pos[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        int row = wrow0 + g + 8 * h;
        pos[h] = row < tv.n_rows ? tv.pos(row) : -1;
    }
    const int warp_max_pos = wrow0 < tv.n_rows ? tv.pos(min(wrow0 + kRowsPerWarp, tv.n_rows) - 1) : -1;
    const int warp_min_pos = wrow0 + kRowsPerWarp <= tv.n_rows ? tv.pos(wrow0) : -1;  // -1: always mask

    load_q_tile<D>(p, tv, q_vec, q_s);
    cp_async_commit();
    if (n_kt > 0) load_kv_tile<D>(p, tv, 0, horizon, k_buf, v_buf);
    cp_async_commit();
    cp_async_wait<1>();  // Q landed (tile 0 may still be in flight)
    __syncthreads();

    const int lm = lane >> 3, lr = lane & 7;  // ldmatrix: which 8x8 matrix this lane addresses, and its row
    uint32_t qf[C::kQInRegs ? D / 16 : 1][4];
    if constexpr (C::kQInRegs) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            ldmatrix_x4(qf[kk], q_s + (warp * 16 + (lm & 1) * 8 + lr) * S + kk * 16 + (lm >> 1) * 8);
    }

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    const float scale_log2 = p.scale * kLog2e;

    for (int kt = 0; kt < n_kt; ++kt) {
        const int kv0 = kt * BK;
        if (kt + 1 < n_kt)
            load_kv_tile<D>(p, tv, kv0 + BK, horizon, k_buf + ((kt + 1) & 1) * BK * S, v_buf + ((kt + 1) & 1) * BK * S);
        cp_async_commit();  // possibly empty: keeps "all but the newest group" meaning tile kt
        cp_async_wait<1>();
        __syncthreads();
        const uint16_t* k_s = k_buf + (kt & 1) * BK * S;
        const uint16_t* v_s = v_buf + (kt & 1) * BK * S;
        if (kv0 <= warp_max_pos) {  // warp-uniform: some row of this warp sees a key of the tile
            // S = Q K^T: A = Q (rows x d), B = K^T (d x keys) read from K rows [key][d] (col layout).
            float s[BK / 8][4];
#pragma unroll
            for (int n = 0; n < BK / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t a[4];
                if constexpr (C::kQInRegs) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) a[i] = qf[kk][i];
                } else {
                    ldmatrix_x4(a, q_s + (warp * 16 + (lm & 1) * 8 + lr) * S + kk * 16 + (lm >> 1) * 8);
                }
#pragma unroll
                for (int np = 0; np < BK / 16; ++np) {
                    uint32_t b[4];  // b0,b1 of key n-tile 2np, then of 2np + 1
                    ldmatrix_x4(b, k_s + (np * 16 + (lm >> 1) * 8 + lr) * S + kk * 16 + (lm & 1) * 8);
                    mma_bf16(s[2 * np], a, b[0], b[1]);
                    mma_bf16(s[2 * np + 1], a, b[2], b[3]);
                }
            }
            // Online softmax in the log2 domain; element e of n-tile n is key kv0 + 8n + 2t + (e & 1), row half e >> 1.
            const bool need_mask = kv0 + BK - 1 > warp_min_pos;
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < BK / 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int key = kv0 + 8 * n + 2 * t + (e & 1);
                    float x = s[n][e] * scale_log2;
                    if (need_mask && key > pos[e >> 1]) x = -INFINITY;
                    s[n][e] = x;
                    mx[e >> 1] = fmaxf(mx[e >> 1], x);
                }
            float alpha[2], m_use[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
                mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
                float m_new = fmaxf(m[h], mx[h]);
                m_use[h] = m_new == -INFINITY ? 0.0f : m_new;  // no visible key yet: keep p = 0, no NaN
                alpha[h] = exp2f(m[h] - m_use[h]);
                m[h] = m_new;
                l[h] *= alpha[h];
            }
#pragma unroll
            for (int n = 0; n < BK / 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float pe = exp2f(s[n][e] - m_use[e >> 1]);
                    s[n][e] = pe;
                    l[e >> 1] += pe;
                }
#pragma unroll
            for (int n = 0; n < D / 8; ++n)
                o[n][0] *= alpha[0], o[n][1] *= alpha[0], o[n][2] *= alpha[1], o[n][3] *= alpha[1];
                // O += P V: P's A fragment for keys 16kk..16kk+15 is S's n-tiles 2kk and 2kk+1; B = V (keys x d)
                // from V rows [key][d] through ldmatrix.trans.
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                uint32_t a[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                                 pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int dp = 0; dp < D / 16; ++dp) {
                    uint32_t b[4];  // b0,b1 of d n-tile 2dp, then of 2dp + 1
                    ldmatrix_x4_trans(b, v_s + (kk * 16 + (lm & 1) * 8 + lr) * S + dp * 16 + (lm >> 1) * 8);
                    mma_bf16(o[2 * dp], a, b[0], b[1]);
                    mma_bf16(o[2 * dp + 1], a, b[2], b[3]);
                }
            }
        }
        __syncthreads();  // the next iteration's loads overwrite this buffer
    }
    cp_async_wait<0>();

#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        int row = wrow0 + g + 8 * h;
        if (row >= tv.n_rows) continue;
        const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
        int tok = row / tv.group, head = kvh * tv.group + row % tv.group;
        uint16_t* dst = p.out + (int64_t(tv.q_begin + tok) * p.n_heads + head) * D + 2 * t;
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
            *reinterpret_cast<uint32_t*>(dst + 8 * n) = pack_bf16(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
    }
}

template <int D>
cudaError_t launch_prefill(const AttentionParams& p, const PrefillTile* tiles, int n_tiles, cudaStream_t stream) {
    using C = PrefillConfig<D>;
    // Once per instantiation (thread-safe static init): the tiles need more than the default 48 KB.
    static const cudaError_t attr = cudaFuncSetAttribute(
        attention_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes));
    if (attr != cudaSuccess) return attr;
    const bool q_vec = reinterpret_cast<uintptr_t>(p.q) % 16 == 0 && p.q_row_stride % 8 == 0;
    return detail::launch(attention_prefill_kernel<D>, unsigned(int64_t(n_tiles) * p.n_kv_heads), kThreads,
                          C::kSmemBytes, stream, p, tiles, q_vec);
}

}  // namespace

bool attention_prefill_supported(int head_dim) { return head_dim == 64 || head_dim == 128 || head_dim == 256; }

cudaError_t attention_prefill(const AttentionParams& p, const PrefillTile* tiles, int n_tiles, cudaStream_t stream) {
    if (!attention_prefill_supported(p.head_dim) || p.n_heads <= 0 || p.n_kv_heads <= 0 ||
        p.n_heads % p.n_kv_heads != 0 || p.page_size <= 0 || n_tiles < 0 || p.q_row_stride < 0)
        return cudaErrorInvalidValue;
    if (n_tiles == 0) return cudaSuccess;
    if (!tiles || !p.q || !p.k_pages || !p.v_pages || !p.out || !p.qo_indptr || !p.kv_indptr || !p.kv_indices ||
        !p.kv_last_page_len || int64_t(n_tiles) * p.n_kv_heads > INT_MAX)
        return cudaErrorInvalidValue;
    // 16-byte cp.async of K/V rows and 4-byte bf16x2 stores of out.
    if (reinterpret_cast<uintptr_t>(p.k_pages) % 16 != 0 || reinterpret_cast<uintptr_t>(p.v_pages) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(p.out) % 4 != 0)
        return cudaErrorInvalidValue;
    switch (p.head_dim) {
        case 64:
            return launch_prefill<64>(p, tiles, n_tiles, stream);
        case 128:
            return launch_prefill<128>(p, tiles, n_tiles, stream);
        default:
            return launch_prefill<256>(p, tiles, n_tiles, stream);
    }
}

}  // namespace loradesk::kernels
