// Reference twin of the quantized GEMV (kernels/quant_gemv.cu) and GEMM (kernels/quant_mma.cu): dequantizes the
// checkpoint layouts of QuantGemvParams to f32, then a double-precision dot per output, rounded once to bf16. The
// oracle of tests/kernels/tst_quant_gemv_cuda.cpp; plain C++, builds without CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "quant_params.h"

namespace loradesk::kernels::ref {

float fp16_to_f32(uint16_t v);
float fp8_e4m3_to_f32(uint8_t v);  // e4m3fn: no infinities, 0x7f / 0xff are NaN

// w [p.n, p.k] row-major, f32, as the formula of QuantGemvParams gives it (columns in the checkpoint's order when
// k_order is set). The GEMM twins below take no k_order, as the kernels do.
std::vector<float> quant_dequantize(const QuantGemvParams& p);
// y as quant_gemv computes it, epilogue included (workspace unused).
void quant_gemv(const QuantGemvParams& p);
// w [p.n, p.k] as quant_mma rounds it (no act-order): int4 bf16((q - z) * bf16(scale)), fp8
// bf16(e4m3 * bf16(scale)).
std::vector<float> quant_mma_dequantize(const QuantGemvParams& p);
// y as quant_mma computes it from those weights, bias included (workspace unused); with lora_shrink the xa it
// computes first, into lora.xa.
void quant_mma(const QuantGemvParams& p);
// e4m3fn from f32: nearest, ties to even, saturating to +-448 (the device's __NV_SATFINITE conversion); NaN -> 0x7f.
uint8_t fp8_e4m3_from_f32(float v);
// Twins of fp8_gemm.h: the activation quantization (bit for bit) and the GEMM (f64 sums of the exact products of
// the scaled operands, rounded once to bf16).
void fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                       int scale_ld, int block_cols);
void fp8_gemm(const Fp8GemmParams& p);
// What the epilogue adds to output (t, n): bias and LoRA expand, per quant_params.h.
double quant_epilogue(const QuantGemvParams& p, int t, int n);

}  // namespace loradesk::kernels::ref
