// Round-to-nearest quantizers that write a projection in a published format's exact layout (the tensors of
// quantized_tensor_specs()): FP8 block-wise / per-tensor / per-channel, AWQ int4 GEMM (zero point, AutoAWQ
// packing) and GPTQ int4 (symmetric, v1 or v2 zeros, optional act-order permutation). Used by synth-model and
// the round-trip tests; not a calibrating quantizer (no AWQ scaling search, no GPTQ Hessian updates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/quant_config.h"

namespace loradesk::model {

struct PackedTensor {
    std::string name;
    DType dtype = DType::i32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// Round to nearest even, saturating to +-448 (what quantizers do before the cast; NaN stays NaN).
uint8_t f32_to_fp8_e4m3(float v);

// Quantizes W [out, in] (row-major f32) as projection `prefix`. seed picks the act-order permutation for gptq
// with desc_act (real GPTQ sorts by Hessian diagonal; any permutation exercises the same layout).
std::vector<PackedTensor> quantize_linear(const QuantConfig& q, const std::string& prefix, const float* w, int64_t out,
                                          int64_t in, uint64_t seed);

}  // namespace loradesk::model
