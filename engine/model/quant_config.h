// config.json's `quantization_config`: which published weight-quantization format a checkpoint uses and its
// parameters. parse_quant_config() accepts FP8 block-wise ("fp8" + weight_block_size), compressed-tensors
// float-quantized FP8 (per-tensor, per-channel), AWQ int4 GEMM and GPTQ int4 (v1/v2, with or without
// desc_act) and throws Error(unsupported) naming anything else. The tensor layouts live in quantized_linear.h.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace loradesk::model {

enum class QuantFormat { none, fp8_block, fp8_tensor, fp8_channel, awq, gptq };

struct QuantConfig {
    QuantFormat format = QuantFormat::none;
    int bits = 16;
    int group_size = 0;               // awq/gptq: input features per scale group; -1 (gptq) = one group per column
    int block_out = 0;                // fp8_block: weight_block_size [block_out, block_in]
    int block_in = 0;                 //
    bool desc_act = false;            // gptq act-order: g_idx is a permutation's groups, not i / group_size
    bool sym = true;                  // gptq
    int gptq_version = 1;             // checkpoint_format "gptq" (v1: qzeros hold zero - 1) or "gptq_v2" (zero as is)
    bool dynamic_activations = true;  // fp8: activation_scheme / input_activations.dynamic (we never quantize them)
    // Modules left in bf16: AWQ/FP8 modules_to_not_convert (substring match, as transformers does) and
    // compressed-tensors `ignore` (exact names or "re:" regular expressions).
    std::vector<std::string> not_converted;

    bool quantized() const { return format != QuantFormat::none; }
    // Whether the projection `module` ("model.layers.0.mlp.down_proj") is stored quantized.
    bool quantizes(const std::string& module) const;
};

// "fp8", "fp8-tensor", "fp8-channel", "awq", "gptq"; "none" for unquantized.
std::string quant_format_name(QuantFormat f);
// One line for people and /v1/models: "fp8 e4m3, 128x128 blocks", "gptq int4, group 128, act-order".
std::string quant_description(const QuantConfig& q);

// Reads config.json's `quantization_config` (format none when absent). Throws Error(unsupported) for a
// method or option we do not load, Error(corrupt_file) for a malformed block.
QuantConfig parse_quant_config(const nlohmann::json& config_json);
// The `quantization_config` block the Hub's tools write for this format (null for none).
nlohmann::json quant_config_to_json(const QuantConfig& q);

}  // namespace loradesk::model
