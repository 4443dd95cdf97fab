// Parameters of the weight-only quantized GEMV (quant_gemv.h) and of its twin (ref/ref_quant.h), in the
// layouts the Hugging Face Hub checkpoints store, so that the loader hands tensors over unconverted.
// Plain C++ (fp16/fp8/bf16 as bit patterns); nothing here knows engine types or CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_params.h"

namespace loradesk::kernels {

enum class QuantFormat {
    awq_int4,   // AutoAWQ "gemm" version
    gptq_int4,  // AutoGPTQ / GPTQModel, v1 (stored zero = zero - 1) or v2
    fp8_e4m3,   // fine-grained fp8 (weight_scale_inv per 128x128 block) and compressed-tensors fp8
};

// Which w_scale entry multiplies weight [n, k] of an fp8 matrix.
enum class Fp8Scaling {
    per_tensor,   // w_scale[0]
    per_channel,  // w_scale[n]
    block128,     // w_scale[(n / 128) * ceil(K / 128) + k / 128] (weight_scale_inv, [ceil(N/128), ceil(K/128)])
};

constexpr int kQuantGemvMaxTokens = 4;

// y[t, n] = bf16(sum_k x[t, k] * w[n, k]) for t < n_tokens, f32 accumulation, with w dequantized as:
//   awq_int4:  w[n, k] = (q - z) * s; q nibble of qweight[k, n / 8], z nibble of qzeros[k / G, n / 8],
//              s = scales[k / G, n]. Column n sits in nibble i of its int32 with n % 8 = kAwqOrder[i]
//              (AutoAWQ packs [0, 2, 4, 6, 1, 3, 5, 7]), bits 4i..4i+3.
//   gptq_int4: w[n, k] = (q - z) * s; q = nibble k % 8 of qweight[k / 8, n]; g = g_idx ? g_idx[k] : k / G;
//              z = nibble n % 8 of qzeros[g, n / 8] (+1 when zero_plus_one: GPTQ v1 checkpoints store
//              zero - 1), s = scales[g, n]. Nibble i is bits 4i..4i+3 (sequential packing).
//   fp8_e4m3:  w[n, k] = fp8(w_fp8[n, k]) * scale (fp8_scaling picks the w_scale entry).
struct QuantGemvParams {
    QuantFormat format = QuantFormat::awq_int4;
    const uint16_t* x = nullptr;  // bf16 [n_tokens, x_row_stride]
    int64_t x_row_stride = 0;
    uint16_t* y = nullptr;  // bf16 [n_tokens, y_row_stride]; columns [0, n) written
    int64_t y_row_stride = 0;
    int n_tokens = 1;  // 1..kQuantGemvMaxTokens
    int n = 0;         // out features
    int k = 0;         // in features

    // int4 formats
    const int32_t* qweight = nullptr;  // awq [K, N/8]; gptq [K/8, N]
    const int32_t* qzeros = nullptr;   // [ceil(K/G), N/8]
    const uint16_t* scales = nullptr;  // fp16 [ceil(K/G), N]
    const int32_t* g_idx = nullptr;    // gptq only: [K] group of each input row, or null for k / G
    // gptq only, without g_idx: an act-order matrix with its rows sorted by group at load (runtime/cuda/quant_pack.h),
    // so that qweight row k holds the checkpoint's input row k_order[k] and groups are contiguous (g = k / G). The
    // kernels refuse it: their caller gathers x's columns by k_order and passes the matrix without it, a plain GPTQ
    // matrix then. The reference twin's quant_dequantize puts row k's weights in column k_order[k], the checkpoint's.
    const int32_t* k_order = nullptr;
    int group_size = 128;        // G
    bool zero_plus_one = false;  // gptq v1

    // fp8
    const uint8_t* w_fp8 = nullptr;  // e4m3 [N, K]
    const float* w_scale = nullptr;  // see Fp8Scaling
    Fp8Scaling fp8_scaling = Fp8Scaling::block128;

    // Optional epilogue, added in f32 before the single rounding to bf16 (what would otherwise be a bias_add and
    // an sgmv_expand launch after the GEMV):
    //   bias: y[t, c] += bias[c] (bf16 [n]);
    //   lora_expand: the expand of `lora` (segments, slices, ranks, scales, xa as sgmv_expand reads them; xa
    //   written by sgmv_shrink before this launch): for token t in a segment of slot s > 0 and the slice j holding
    //   site column lora_col + c, y[t, c] += scale_j[s] * sum_{r < rank_j[s]} xa[t, j * max_rank + r] *
    //   Bt_j[r, lora_col + c - out_offset_j]. lora_col places this matrix among the slices' columns (a site split
    //   into several matrices); lora.x and lora.y are unused.
    // lora_token0: added to t where it indexes the segments and xa, i.e. the step token of row 0 (a quant_mma launch
    // over rows 32..63 of a step passes 32).
    const uint16_t* bias = nullptr;
    bool lora_expand = false;
    int lora_col = 0;
    int lora_token0 = 0;
    SgmvParams lora;
    // lora_shrink (with lora_expand; quant_mma, and quant_gemv's fp8 kernel at 1 token): the launch computes xa
    // itself, sgmv_shrink's job, in blocks of its own that it runs first: xa[lora_token0 + t, j * max_rank + r] = x[t]
    // . A_j[slot][r] for this launch's tokens t on an adapter (lora.x and lora.in_features are unused: the shrink reads
    // p.x over p.k). lora_sync points to two int32 that are zero when the launch starts (the shrink's claimed and
    // published units, lora_handover.cuh), a pair per launch that sets it. The shrink blocks claim a unit before their
    // PDL wait, so the kernel launched just before must not write the pair (the CUDA runner zeroes every site's pair at
    // the start of a step, kernels before the first site). Of the launches over the same tokens (a site's parts) the
    // first sets it; the others only expand, their PDL wait ordering them after it.
    bool lora_shrink = false;
    int32_t* lora_sync = nullptr;
    // lora_shrink launches, tests only: blocks take their work in reverse index order, an order CUDA may dispatch them
    // in, under which the blocks that stream weights reach their epilogue before any shrink block has run.
    bool reverse_block_order = false;
    // quant_mma only: x was complete before the predecessor kernel started, so the launch reads it without waiting
    // for that kernel and waits only before its epilogue. For the launch right after this library's
    // sgmv_shrink, which releases its successor only once its own wait has seen x's writer complete: the shrink
    // then overlaps this kernel's weight streaming instead of preceding it.
    bool x_before_wait = false;

    // int4 split-K: k rows per block, a multiple of group_size up to 1024; 0 lets the launcher choose (tests and
    // the bench set it to cover and compare the splits).
    int split_chunk = 0;
    // quant_mma only: 64-column groups per block (1, 2 or 4; its 4 warps split the block's k-range in 4 / groups
    // parts); 0 lets the launcher choose (the bench sweeps it).
    int mma_col_groups = 0;
    // int4 split-K scratch of quant_gemv_workspace_bytes(n, k, group_size) bytes: arrival counters, zero before the
    // first launch that uses it (every launch leaves them zero again), then one f32 partial row per split and
    // token, summed in split order by the last block of a tile, so results do not depend on which block finishes
    // first (identical rows and repeated runs give identical bits). Launches that may overlap need their own.
    void* workspace = nullptr;
};

// The fp8 GEMM's operands (fp8_gemm.h; twin ref::fp8_gemm): weights as the checkpoint stores them and x quantized
// per token (fp8_quantize_rows), in blocks of 128 columns for block-scaled weights, whole rows otherwise.
//
// The rows the GEMM runs on for n_tokens tokens: cuBLASLt's block-scaled kernels take token counts that are a
// multiple of 4 only (H100, cuBLASLt 13.1: none for 1 or 33 tokens). The padding rows are quantized as zeros.
inline int fp8_gemm_rows(int n_tokens) { return (n_tokens + 3) / 4 * 4; }
// x_scale's row length (floats per block of columns): its scales are token-contiguous per block.
inline int fp8_act_scale_ld(int n_tokens) { return fp8_gemm_rows(n_tokens); }
// Columns per x scale: 128 for block-scaled weights, the whole row (k) otherwise.
inline int fp8_act_block_cols(Fp8Scaling w_scaling, int k) { return w_scaling == Fp8Scaling::block128 ? 128 : k; }

struct Fp8GemmParams {
    Fp8Scaling w_scaling = Fp8Scaling::block128;
    const uint8_t* w = nullptr;      // e4m3 [n, k] row-major, 16-byte aligned
    const float* w_scale = nullptr;  // block128 [n / 128][k / 128] row-major (weight_scale_inv), per_channel [n]
    const uint8_t* xq = nullptr;     // e4m3 [fp8_gemm_rows(n_tokens), k], from fp8_quantize_rows
    const float* x_scale = nullptr;  // [ceil(k / fp8_act_block_cols)][fp8_act_scale_ld(n_tokens)]
    uint16_t* y = nullptr;           // bf16 [fp8_gemm_rows(n_tokens), y_row_stride]; columns [0, n), padding rows zero
    int64_t y_row_stride = 0;
    int n_tokens = 0, n = 0, k = 0;
};

inline constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// The workspace starts with a fixed block of int32 arrival counters, one per 128 output columns, the same for
// every n: launches of different widths share one workspace, and a wider launch's counters must not lie where a
// narrower one left its partials. Then f32 partials [ceil(k / group_size) splits][kQuantGemvMaxTokens][n] (a
// split covers at least one group of k).
constexpr int kQuantGemvMaxColumns = 128 * 1024;
constexpr std::size_t kQuantGemvCounterBytes = std::size_t(kQuantGemvMaxColumns / 128) * 4;
inline std::size_t quant_gemv_workspace_bytes(int n, int k, int group_size) {
    const std::size_t splits = group_size > 0 ? std::size_t((k + group_size - 1) / group_size) : 1;
    return kQuantGemvCounterBytes + splits * std::size_t(kQuantGemvMaxTokens) * std::size_t(n) * 4;
}

}  // namespace loradesk::kernels
