// Synthetic Hugging Face checkpoints: real architectures and shapes (presets from a few MB to 8B)
// with deterministic random weights, written exactly like HF writes them (config.json,
// generation_config.json, safetensors shards + index, tokenizer files). Tensors are streamed to
// disk, so an 8B preset needs no more RAM than a small one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace loradesk::model {

struct SynthOptions {
    std::string preset = "tiny";
    std::string out_dir;
    uint64_t seed = 0;
    std::string tokenizer_dir;  // copy tokenizer.json / tokenizer_config.json from here; empty = synthesize
    DType dtype = DType::bf16;
    std::size_t max_shard_bytes = std::size_t(4) << 30;
};

std::vector<std::string> synth_preset_names();

// The preset's config. vocab_size 0 in the preset means "fit the tokenizer"; n_tokens is the
// tokenizer's max id + 1, and the vocabulary is rounded up to a multiple of 64. Throws
// Error(invalid_argument) for an unknown preset, listing the known ones.
ModelConfig synth_preset_config(const std::string& preset, int n_tokens);

// Writes the checkpoint; returns its config. Throws Error on bad options or I/O failures.
ModelConfig synth_model(const SynthOptions& options);

}  // namespace loradesk::model
