// Synthetic PEFT LoRA adapters for tests, benchmarks and `loradeskd synth-adapter`: writes
// adapter_config.json the way PEFT's save_pretrained does (sorted keys, indent 2) and
// adapter_model.safetensors with non-zero A and B, sized so the adapter visibly changes logits.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"
#include "runtime/lora_weights.h"

namespace loradesk::lora {

struct SynthAdapterSpec {
    int rank = 8;
    double alpha = 16;
    bool rslora = false;
    std::vector<runtime::LoraModule> targets;  // empty: all seven projections
    std::vector<int> layers;                   // empty: every layer (layers_to_transform stays null)
    uint64_t seed = 0;
    DType dtype = DType::f32;
    std::vector<std::pair<std::string, int>> rank_pattern;      // PEFT keys, file order
    std::vector<std::pair<std::string, double>> alpha_pattern;  // PEFT keys, file order
    bool fan_in_fan_out = false;
    std::string base_model;  // base_model_name_or_path
    // Standard deviation of the entries of scale·B·A (the merged delta). 0: 0.2/sqrt(in_features),
    // a visible but bounded change for weights initialised with std ~1/sqrt(in).
    double delta_std = 0.0;
};

// Writes out_dir/adapter_config.json and out_dir/adapter_model.safetensors (creating out_dir).
// Throws ExpectedError(invalid_argument) for a spec the base cannot take (layer out of range, rank <= 0).
void synthesize_adapter(const model::ModelConfig& base, const SynthAdapterSpec& spec, const std::string& out_dir);

// The adapter_config.json text PEFT would write for `spec` (exposed so tests can edit it).
std::string synth_adapter_config_json(const SynthAdapterSpec& spec);

// Parses "q_proj,v_proj" (throws ExpectedError(invalid_argument) naming unknown modules).
std::vector<runtime::LoraModule> parse_lora_targets(const std::string& csv);

}  // namespace loradesk::lora
