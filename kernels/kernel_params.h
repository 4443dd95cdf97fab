// Parameter structs shared by the CUDA kernels (launchers.h) and their C++ reference twins (ref/).
// Plain C++ only: bf16 tensors are passed as uint16_t bit patterns so that both sides take the very same
// struct and tests can run a kernel and its twin on identical arguments. Nothing here knows engine types.
#pragma once

#include <cstdint>

namespace loradesk::kernels {

enum class RopeKind { default_, linear, llama3 };

// Rotary embedding on the fused QKV rows, optional per-head RMSNorm of q and k first (Qwen3), and the
// write of this step's K and V into the paged pools. Row t of qkv is [q (n_heads*hd) | k (n_kv*hd) | v].
// K/V pools: [n_pages, page_size, n_kv_heads, head_dim]; kv_slots[t] = page * page_size + offset.
struct RopeKvParams {
    uint16_t* qkv = nullptr;  // [n_tokens, qkv_row_stride]; q (and k, v) rotated/normalised in place
    int64_t qkv_row_stride = 0;
    int n_tokens = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;                    // even, <= 256
    const int32_t* positions = nullptr;  // [n_tokens] rotary positions
    const int32_t* kv_slots = nullptr;   // [n_tokens]
    const float* inv_freq = nullptr;     // [head_dim / 2]
    const uint16_t* q_norm = nullptr;    // [head_dim] or null (no q/k norm)
    const uint16_t* k_norm = nullptr;    // [head_dim] or null
    float norm_eps = 1e-6f;
    uint16_t* k_pages = nullptr;
    uint16_t* v_pages = nullptr;
    // Set: a LoRA delta still to be added to q|k|v (SgmvParams::delta, rows qkv_row_stride apart): every value is
    // read as bf16(qkv + delta), exactly what the expand would have stored into qkv.
    const float* qkv_delta = nullptr;
};

// Paged attention over the ForwardBatch layout (flashinfer conventions), causal within each sequence:
// query token i of sequence s sits at KV position kv_len(s) - n_q(s) + i and sees keys 0..that position.
struct AttentionParams {
    const uint16_t* q = nullptr;  // [n_tokens, n_heads, head_dim] rows q_row_stride apart
    int64_t q_row_stride = 0;
    const uint16_t* k_pages = nullptr;  // [n_pages, page_size, n_kv_heads, head_dim]
    const uint16_t* v_pages = nullptr;
    const int32_t* qo_indptr = nullptr;         // [n_seqs + 1]
    const int32_t* kv_indptr = nullptr;         // [n_seqs + 1]
    const int32_t* kv_indices = nullptr;        // [total pages]
    const int32_t* kv_last_page_len = nullptr;  // [n_seqs]
    int n_seqs = 0;
    int page_size = 16;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;         // <= 256
    float scale = 1.0f;       // usually 1/sqrt(head_dim)
    uint16_t* out = nullptr;  // [n_tokens, n_heads * head_dim], dense
    // attention_decode only, optional: one zeroed int32 per (merge group, KV head) of the largest plan. With it,
    // the last block of each split group merges the partials itself (and zeroes its counter again) instead of a
    // merge launch; see attention_decode_counters().
    int32_t* merge_counters = nullptr;
    // attention_decode only, optional: the longest sequence's keys, which picks the block size of whole-sequence
    // launches of one query row per KV head (decode_whole_in_4_warps). 0: unknown, 4-warp blocks once 8-warp ones
    // would need a second wave. Only speed depends on it (a CUDA graph replays the size chosen at capture).
    int max_kv_len = 0;
};

// One LoRA target inside a (possibly fused) projection output: the columns
// [out_offset, out_offset + out_features) of y. Slot s >= 1 keeps A at a + (s-1)*slot_stride as
// [max_rank, in_features] and B transposed at bt + (s-1)*slot_stride as [max_rank, out_features];
// only the first ranks[s] rows are used. ranks[0] = 0 (slot 0 is the base model).
struct LoraSlice {
    const uint16_t* a = nullptr;
    const uint16_t* bt = nullptr;
    const int32_t* ranks = nullptr;  // [n_slots + 1]
    const float* scales = nullptr;   // [n_slots + 1]
    int out_offset = 0;
    int out_features = 0;
};

constexpr int kMaxLoraSlices = 3;

// SGMV over adapter segments: tokens [seg_indptr[i], seg_indptr[i+1]) use slot seg_slot[i].
// shrink: xa[t, j*max_rank + r] = x[t] . A_j[r]       (r < rank of slice j's slot)
// expand: y[t, off_j + c] += scale_j * sum_r xa[t, j*max_rank + r] * Bt_j[r, c]
// With delta set the expand leaves y alone and writes the f32 term instead, delta[t, off_j + c] = scale_j * sum_r
// ..., rows y_row_stride apart, zero for tokens of slot 0 and slices the slot's adapter does not touch: a kernel
// that reads y later adds it (bf16(y + delta), the value the plain expand would have stored), so the expand need not
// wait for the base projection that writes y (the CUDA runner runs it beside that projection).
struct SgmvParams {
    const uint16_t* x = nullptr;  // [n_tokens, x_row_stride]
    int64_t x_row_stride = 0;
    int in_features = 0;
    float* xa = nullptr;    // [n_tokens, n_slices * max_rank]
    uint16_t* y = nullptr;  // [n_tokens, y_row_stride]
    int64_t y_row_stride = 0;
    float* delta = nullptr;               // [n_tokens, y_row_stride], or null: the expand adds into y
    const int32_t* seg_indptr = nullptr;  // [n_segs + 1]
    const int32_t* seg_slot = nullptr;    // [n_segs]
    int n_segs = 0;
    int max_seg_len = 0;  // longest segment (sizes the grid)
    int max_rank = 0;
    int64_t slot_stride = 0;  // elements between consecutive slots' A (and Bt) of one slice
    int n_slices = 1;
    LoraSlice slices[kMaxLoraSlices];
};

// Skinny GEMM for decode-sized batches (n_tokens <= kGemvMaxTokens), the memory-bound case where cuBLAS
// leaves bandwidth unused: y[t, c] = x[t] . w[c] (+ bias[c]) (+ LoRA), f32 accumulation.
// swiglu: w's rows are [gate (out_rows/2) | up (out_rows/2)] and y[t, c] = silu(g) * u for c < out_rows/2,
// with g and u the gate and up rows' results (bias and LoRA included) kept in f32 — the MLP activation
// fused into the gate|up projection. lora: the SGMV shrink and expand of `sgmv` fused into the same launch
// (sgmv.x, in_features, xa, segments and slices as for sgmv_shrink; its y fields are unused): blocks claim
// units of the shrink in sync[1], publish them in sync[0], and the others wait for sync[0] before their
// epilogue, running still-unclaimed units themselves first (gemv.cu: deadlock-free whatever the dispatch
// order). sync points to two int32 that are zero when the launch starts: the caller zeroes them (the CUDA
// runner zeroes every call site's pair with one memset at the start of a step). Resetting them in the kernel
// would need every block to count itself out on one address at the end — same-address atomics that
// serialise in L2 and cost ~3 µs per launch.
constexpr int kGemvMaxTokens = 8;

struct GemvParams {
    const uint16_t* w = nullptr;  // [out_rows, in], rows 16-byte aligned (in % 8 == 0)
    const uint16_t* x = nullptr;  // [n_tokens, x_row_stride]
    int64_t x_row_stride = 0;
    int n_tokens = 0;
    int in = 0;
    int out_rows = 0;
    const uint16_t* bias = nullptr;  // [out_rows] or null
    bool swiglu = false;
    void* y = nullptr;  // bf16, or f32 when f32_out; [n_tokens, y_row_stride]
    int64_t y_row_stride = 0;
    bool f32_out = false;
    bool lora = false;
    SgmvParams sgmv;
    int32_t* sync = nullptr;
    // Test hook (tests/kernels/tst_gemv_progress_cuda.cpp): blocks take their roles in reverse index order, the
    // dispatch order least favourable to a handshake that relies on it. Results are the same either way.
    bool reverse_block_order = false;
};

}  // namespace loradesk::kernels
