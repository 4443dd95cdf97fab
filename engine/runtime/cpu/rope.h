// Rotary position embeddings as transformers applies them (rotate_half layout: dimension i pairs
// with i + head_dim/2). inv_freq follows `_compute_default_rope_parameters`, linear scaling and
// `_compute_llama3_parameters` exactly.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace loradesk::runtime::cpu {

// inv_freq[i] for i in [0, head_dim/2), scaling applied.
std::vector<float> rope_inv_freq(const model::ModelConfig& c);

// Rotates n_heads vectors of head_dim (contiguous, [n_heads, head_dim]) for one token at `position`.
void apply_rope(float* x, int n_heads, int head_dim, int position, const std::vector<float>& inv_freq);

}  // namespace loradesk::runtime::cpu
