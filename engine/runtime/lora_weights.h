// Host-side LoRA weights in the canonical form every runner consumes: per layer, per projection,
// A [rank, in] and B [out, rank] in f32 with the module's own scale (alpha/r or alpha/sqrt(r)).
// fan_in_fan_out, rank/alpha patterns and dtype conversion are resolved by the loader (engine/lora).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

namespace loradesk::runtime {

enum class LoraModule : int { q = 0, k, v, o, gate, up, down };
constexpr int kNumLoraModules = 7;
std::string_view lora_module_name(LoraModule m);  // "q_proj", ...

struct LoraModuleWeights {
    int rank = 0;          // 0: this module is not adapted
    float scale = 0.0f;    // applied as y += scale * B (A x)
    std::vector<float> a;  // [rank, in_features]
    std::vector<float> b;  // [out_features, rank]
};

struct LoraWeights {
    std::vector<std::array<LoraModuleWeights, kNumLoraModules>> layers;  // [n_layers]

    int max_rank() const;
    std::size_t bytes() const;
};

}  // namespace loradesk::runtime
