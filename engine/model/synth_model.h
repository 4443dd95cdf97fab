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
    std::string quant;  // "" (none) or one of synth_quant_names(): projections written quantized, Hub layout
};

std::vector<std::string> synth_preset_names();
// fp8 (block 128x128), fp8-tensor, fp8-channel (compressed-tensors), awq, gptq, gptq-actorder.
std::vector<std::string> synth_quant_names();
// The quantization_config synth-model writes for `name` and this model: AWQ's group is the largest of
// 128, 64, 32 dividing every projection's in_features; GPTQ keeps 128 (its last group may be partial).
// Throws Error(invalid_argument) for an unknown name, listing the known ones.
QuantConfig synth_quant_config(const std::string& name, const ModelConfig& c);

// The preset's config. vocab_size 0 in the preset means "fit the tokenizer"; n_tokens is the
// tokenizer's max id + 1, and the vocabulary is rounded up to a multiple of 64. Throws
// Error(invalid_argument) for an unknown preset, listing the known ones.
ModelConfig synth_preset_config(const std::string& preset, int n_tokens);

// Writes the checkpoint; returns its config. Throws Error on bad options or I/O failures.
ModelConfig synth_model(const SynthOptions& options);

}  // namespace loradesk::model
