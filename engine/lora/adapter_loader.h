// Reading a PEFT LoRA adapter folder: tensor-driven discovery of the adapted modules, validation
// against the config and (when given) the base model's shapes, the content digest, and conversion to
// runtime::LoraWeights. Tensors decide what is loaded; adapter_config.json decides scales and must
// agree with them. Everything we cannot apply exactly fails closed with an ExpectedError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "lora/adapter_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "runtime/lora_weights.h"

namespace loradesk::lora {

// One adapted projection: its A [rank, in] and B [out, rank] views into the mapped file.
struct AdapterModule {
    int layer = 0;
    runtime::LoraModule module = runtime::LoraModule::q;
    std::string path;  // base-model module path: "model.layers.3.self_attn.q_proj"
    int rank = 0;
    float scale = 0.0f;
    const model::TensorView* a = nullptr;
    const model::TensorView* b = nullptr;
};

// A validated adapter whose tensors are mapped but not yet converted. Cheap to build (headers only).
struct AdapterPlan {
    std::string dir;
    std::string name;  // folder name
    AdapterConfig config;
    std::unique_ptr<model::SafetensorsFile> file;
    std::vector<AdapterModule> modules;  // sorted by (layer, module)
};

// Validates dir as a PEFT LoRA adapter. With `base`, also checks layers and in/out features against
// the base model ("... (is it for another base model?)"); max_rank > 0 bounds every module's rank.
AdapterPlan plan_adapter(const std::string& dir, const model::ModelConfig* base, int max_rank);

// sha256 hex over the canonical form: per module path (sorted) its rank and f32 scale (the config
// fields that change the math, already resolved, so equivalent configs agree), then every tensor by
// sorted name with dtype, shape and bytes. The folder name and path are not part of it.
std::string adapter_digest(const AdapterPlan& plan);
// How many times adapter_digest ran in this process (a statistic for tests and benchmarks that check
// that a warm digest cache hashes nothing). Thread-safe.
uint64_t adapter_digests_computed();

// Converts a plan's tensors to f32 runtime weights for a base with `n_layers` layers. With a pool,
// modules convert in parallel (do not pass the pool whose worker runs this call: parallel_for would
// wait on itself). With `reuse` (weights of an evicted adapter, taken over), buffers whose capacity
// suffices are overwritten in place, so a steady-state load touches no new pages; modules the plan
// lacks are emptied. The result never depends on what `reuse` held.
runtime::LoraWeights convert_adapter(const AdapterPlan& plan, int n_layers, ThreadPool* pool = nullptr,
                                     runtime::LoraWeights* reuse = nullptr);

// The loader the engine uses (and the one `logits/generate --adapter DIR` should call):
// plan_adapter(dir, &base, max_rank) + convert_adapter. Throws ExpectedError with what to do.
runtime::LoraWeights load_adapter(const std::string& dir, const model::ModelConfig& base, int max_rank,
                                  ThreadPool* pool = nullptr, runtime::LoraWeights* reuse = nullptr);

// in/out features of one projection of `base` (what A's columns and B's rows must be).
int lora_in_features(const model::ModelConfig& base, runtime::LoraModule m);
int lora_out_features(const model::ModelConfig& base, runtime::LoraModule m);

}  // namespace loradesk::lora
