// CUDA launcher of the weight-only int4 / fp8 GEMM on tensor cores (kernels/quant_mma.cu): up to 32 tokens per
// launch against AWQ / GPTQ int4 and fp8 e4m3 weights in their checkpoint layouts (QuantGemvParams), for the decode
// batches past the 1-4 token GEMV (and shapes it refuses), where dequantizing to bf16 for cuBLAS streams every weight
// three times. Same contract as launchers.h: raw device pointers, an explicit stream, asynchronous, returns the launch
// status; never throws, logs or syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "quant_params.h"

namespace loradesk::kernels {

constexpr int kQuantMmaMaxTokens = 32;     // per launch: more tokens take several launches (or cuBLAS)
constexpr int kQuantMmaMaxLoraTokens = 8;  // per launch with lora_expand, lora_shrink or x_before_wait
// Split-K arrival counters are quant_gemv's, one per 64 columns of the narrowest tiles.
constexpr int kQuantMmaMaxColumns = int(kQuantGemvCounterBytes / 4) * 64;

// Split-K of a launch: k rows per block (a multiple of 32) and the number of splits, from the shape, the token
// count and the column groups per block, so the workspace can be sized at load. split_chunk > 0 overrides the
// rows (tests and the bench).
struct QuantMmaSplit {
    int chunk = 0;
    int splits = 1;
};
QuantMmaSplit quant_mma_split(int n, int k, int split_chunk, int n_tokens, int col_groups);
// Workspace any launch at this shape may need (any token count, any column groups; split_chunk as the launches
// will pass it): quant_gemv's arrival counters, then f32 partials [splits][n_tokens][n]. Counters come back
// zeroed, as quant_gemv leaves them: one workspace of the larger of the two sizes serves both kernels on one
// stream.
std::size_t quant_mma_workspace_bytes(int n, int k, int split_chunk = 0);

// Whether the kernel takes p: no act-order (g_idx and k_order null), n_tokens 1..kQuantMmaMaxTokens, n % 8 == 0,
// n <= kQuantMmaMaxColumns, k % 32 == 0, int4 group_size a multiple of 32 (GPTQ's last group may be partial),
// split_chunk a multiple of 32 whose x rows fit the block's 64 KiB, mma_col_groups 0, 1, 2 or 4, x_row_stride %
// 8 == 0, even y_row_stride, 16-byte aligned x / qweight / scales / workspace, 8-byte aligned w_fp8. The
// epilogue adds the bias and, with lora_expand, the LoRA expand (1 to kMaxLoraSlices slices, xa given). lora_shrink
// (the shrink in this launch) also needs lora_expand, lora_sync, no x_before_wait, every slice's A 16-byte aligned
// with its ranks, max_rank >= 1 and slot_stride % 8 == 0.
bool quant_mma_supported(const QuantGemvParams& p);
// y[t, c] = bf16(sum_k x[t, k] * w[c, k] + bias[c] + LoRA) with w[c, k] = bf16((q - z) * bf16(s)) for int4 (the zero
// subtracted exactly and the fp16 scale rounded to bf16, as vLLM's Marlin does for bf16 models) and
// bf16(e4m3 * bf16(s)) for fp8; products and sums in f32 on the tensor cores. Deterministic (split partials summed in
// split order). cudaErrorInvalidValue without launching when unsupported.
cudaError_t quant_mma(const QuantGemvParams& p, cudaStream_t stream);

}  // namespace loradesk::kernels
