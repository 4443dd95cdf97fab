// Dequantization of quantized projections (quantized_linear.h) to f32 [out, in] rows, the reference every
// faster path (the CUDA upload today, fused kernels later) is checked against. Follows the published
// formulas: fp8 w * scale; awq (q - z) * s with AWQ's interleaved nibbles; gptq (q - (z + offset)) * s with
// groups taken from g_idx. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "model/quantized_linear.h"

namespace loradesk::model {

// OCP FP8 E4M3 ("e4m3fn"): bias 7, no infinities, 0x7f/0xff are NaN, max 448.
float fp8_e4m3_to_f32(uint8_t v);

// The 4-bit value of logical column `col` (0..7 within its int32) in AWQ's packing, which stores
// columns 0..7 in nibbles 0, 2, 4, 6, 1, 3, 5, 7 (AutoAWQ's order map [0, 2, 4, 6, 1, 3, 5, 7]).
int awq_nibble(uint32_t packed, int col);

// Writes W [out_features, in_features] as f32 into out (out_features * in_features floats).
void dequantize(const QuantizedLinear& l, float* out);
std::vector<float> dequantize(const QuantizedLinear& l);

}  // namespace loradesk::model
