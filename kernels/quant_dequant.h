// CUDA launcher that expands a weight-only quantized matrix (AWQ / GPTQ int4, fp8 e4m3; the checkpoint layouts
// of QuantGemvParams) into bf16 rows, for the steps the quantized GEMV does not take (prefill, batches of 3+):
// the runner dequantizes a projection a slice of rows at a time into scratch and multiplies it with cuBLAS.
// Same contract as launchers.h: raw device pointers, an explicit stream, asynchronous, returns the launch
// status; never throws, logs or syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "quant_params.h"

namespace loradesk::kernels {

// Whether quant_dequantize takes p (x, y, n_tokens, workspace and split_chunk are not read) and the row range:
// int4: n % 8 == 0, k % 8 == 0, group_size > 0 (GPTQ's last group may be partial: scales have ceil(k / G)
// rows), row_begin and n_rows multiples of 8; fp8: any n and k. Rows must lie within [0, n). GPTQ also needs
// w_out 16-byte aligned (cudaErrorInvalidValue otherwise). g_idx: GPTQ only. k_order is refused: a matrix sorted
// by group dequantizes as the plain GPTQ matrix it is without it, for x gathered by k_order (quant_params.h).
bool quant_dequantize_supported(const QuantGemvParams& p, int row_begin, int n_rows);
// w_out bf16 [n_rows, k] row-major: w_out[r, k] = bf16_rn(weight[row_begin + r, k]) with weight as quant_params.h
// defines it (the f32 product (q - z) * scale, or fp8 * scale, rounded once), so it equals the reference twin
// rounded to bf16 bit for bit. cudaErrorInvalidValue without launching when
// unsupported.
cudaError_t quant_dequantize(const QuantGemvParams& p, int row_begin, int n_rows, uint16_t* w_out, cudaStream_t stream);

}  // namespace loradesk::kernels
