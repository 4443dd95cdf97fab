// ModelRunner: executes ForwardBatches for one loaded base model on one device, owning the device
// memory for weights, the KV page pool and the LoRA slots. Implementations: cpu/ (the reference and
// CI runner) and cuda/. Not thread-safe: the engine loop thread is its only caller.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "runtime/forward_batch.h"
#include "runtime/lora_weights.h"

namespace loradesk::runtime {

struct MemoryReport {
    std::size_t weight_bytes = 0;
    std::size_t kv_bytes = 0;
    std::size_t lora_slot_bytes = 0;
    std::size_t workspace_bytes = 0;
};

class ModelRunner {
public:
    virtual ~ModelRunner() = default;

    virtual const model::ModelConfig& config() const = 0;
    virtual std::string device_name() const = 0;  // "cpu (2 threads)", "NVIDIA H100 80GB HBM3"
    virtual MemoryReport memory() const = 0;

    // Bytes one KV page (all layers, K and V) takes on this device.
    virtual std::size_t kv_page_bytes(int page_size) const = 0;
    // Allocates the page pool. Called once, before the first forward.
    virtual void allocate_kv(int n_pages, int page_size) = 0;

    // LoRA slots 1..n_slots, each up to max_rank. Called once; slot 0 is always "no adapter".
    virtual void configure_lora_slots(int n_slots, int max_rank) = 0;
    // Makes the weights usable by later forwards with seq_lora_slot == slot. The CPU runner copies
    // synchronously; the CUDA runner copies on its own stream and orders later forwards after it.
    virtual void load_lora_slot(int slot, const LoraWeights& weights) = 0;
    virtual void clear_lora_slot(int slot) = 0;

    // Runs one step; logits gets [logits_indices.size(), vocab_size] in f32, row-major.
    virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;
};

}  // namespace loradesk::runtime
