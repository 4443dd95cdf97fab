// A quantized projection as published on the Hub: views over the checkpoint's packed tensors plus the
// parameters needed to read them. quantized_tensor_specs() is the single list of names, dtypes and shapes
// per format (the loader validates against it, synth-model writes it):
//   fp8 block   <p>.weight F8_E4M3 [out, in], <p>.weight_scale_inv F32 [ceil(out/bo), ceil(in/bi)]
//   fp8 tensor  <p>.weight F8_E4M3 [out, in], <p>.weight_scale [1] (or [])
//   fp8 channel <p>.weight F8_E4M3 [out, in], <p>.weight_scale [out, 1] (or [out])
//   awq         <p>.qweight I32 [in, out/8] (AWQ nibble order), <p>.qzeros I32 [in/g, out/8], <p>.scales F16 [in/g,
//   out] gptq        <p>.qweight I32 [in/8, out], <p>.qzeros I32 [ceil(in/g), out/8], <p>.scales F16 [ceil(in/g), out],
//               <p>.g_idx I32 [in]
// Scales may be F32, F16 or BF16 in any format. Immutable; the views borrow the checkpoint's mappings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/quant_config.h"
#include "model/safetensors.h"

namespace loradesk::model {

struct QuantTensorSpec {
    std::string name;
    DType dtype = DType::i32;  // what the Hub's tools write
    std::vector<int64_t> shape;
};

struct QuantizedLinear {
    QuantFormat format = QuantFormat::none;
    int64_t out_features = 0;
    int64_t in_features = 0;
    const TensorView* qweight = nullptr;  // fp8: weight; awq/gptq: qweight
    const TensorView* scales = nullptr;   // fp8 block: weight_scale_inv; fp8 tensor/channel: weight_scale
    const TensorView* zeros = nullptr;    // awq/gptq qzeros
    const TensorView* g_idx = nullptr;    // gptq
    int group_size = 0;                   // awq/gptq, resolved (in_features for gptq's -1)
    int block_out = 0;                    // fp8 block
    int block_in = 0;
    int zero_offset = 0;  // added to stored zeros: 1 for GPTQ v1 checkpoints (AutoGPTQ stores zero - 1)

    int64_t n_groups() const;  // awq/gptq scale rows
    std::size_t bytes() const;
};

// Names, dtypes and shapes of the tensors a quantized projection `prefix` ("model.layers.0.mlp.up_proj") has.
// Throws Error(corrupt_file) when the projection's shape cannot be packed in the format (e.g. AWQ out % 8).
std::vector<QuantTensorSpec> quantized_tensor_specs(const QuantConfig& q, const std::string& prefix, int64_t out,
                                                    int64_t in);

using TensorLookup = std::function<const TensorView*(const std::string&)>;

// Finds and validates the tensors of `prefix` (present, dtype, shape, g_idx range). Throws Error(corrupt_file)
// naming the tensor and what was expected.
QuantizedLinear bind_quantized_linear(const TensorLookup& find, const QuantConfig& q, const std::string& prefix,
                                      int64_t out, int64_t in);

}  // namespace loradesk::model
