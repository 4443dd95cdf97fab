// ModelRunner: executes ForwardBatches for one loaded base model on one device, owning the device
// memory for weights, the KV page pool and the LoRA slots. Implementations: cpu/ (the reference and
// CI runner) and cuda/. Not thread-safe: the engine loop thread is its only caller, except for
// prepare_lora, which adapter loader threads call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model_config.h"
#include "runtime/forward_batch.h"
#include "runtime/lora_weights.h"

namespace loradesk::runtime {

// An adapter's weights in a runner's own upload-ready form (the CUDA runner: bf16, slot layout, pinned host
// memory), made by prepare_lora off the engine loop so that load_prepared_lora_slot only issues copies.
// Immutable once made; the host tier holds it instead of the f32 LoraWeights.
class PreparedLora {
  public:
    virtual ~PreparedLora() = default;
    virtual std::size_t bytes() const = 0;  // host memory it holds (counted against the LoRA host budget)
};

// A device's memory as its driver reports it now (bytes).
struct DeviceMemory {
    std::size_t total = 0;
    std::size_t free = 0;
};

struct MemoryReport {
    std::size_t weight_bytes = 0;
    std::size_t kv_bytes = 0;
    std::size_t lora_slot_bytes = 0;
    std::size_t workspace_bytes = 0;
};

// Allowed-token masks of grammar-constrained rows whose argmax is taken where the logits are: row r keeps to the
// tokens of mask row_mask[r] (words [row_mask[r] * words_per_row, +words_per_row), bit id % 32 of word id / 32)
// when row_mask[r] >= 0. The engine loop computes masks while the step runs: `ready`, when set, is called (on the
// calling thread) once the step is under way and before the words are read.
struct RowMasks {
    std::span<const uint32_t> words;
    std::span<const int32_t> row_mask;  // one entry per logits row; empty = no row is masked
    int words_per_row = 0;
    std::function<void()> ready;
};

class ModelRunner {
  public:
    virtual ~ModelRunner() = default;

    virtual const model::ModelConfig& config() const = 0;
    virtual std::string device_name() const = 0;  // "cpu (2 threads)", "NVIDIA H100 80GB HBM3"
    virtual MemoryReport memory() const = 0;
    // Total and free memory of the device the runner computes on; nullopt for host runners, whose memory
    // the engine does not plan.
    virtual std::optional<DeviceMemory> device_memory() const { return std::nullopt; }
    // Device bytes configure_lora_slots(n, max_rank) takes per slot (the memory planner's unit).
    virtual std::size_t lora_slot_bytes(int max_rank) const;

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

    // Converts an adapter into this runner's upload-ready form, or returns nullptr when the runner has none
    // (the CPU runner: load_lora_slot is a plain copy). Thread-safe against everything but
    // configure_lora_slots (call it after that): loader threads call it while the loop steps. Throws like
    // load_lora_slot for weights that do not fit the slots.
    virtual std::shared_ptr<const PreparedLora> prepare_lora(const LoraWeights& weights) const {
        (void)weights;
        return nullptr;
    }
    // load_lora_slot for a form this runner's prepare_lora made; the runner keeps `prepared` alive until the
    // copy has landed. Only runners whose prepare_lora returns non-null need to override it.
    virtual void load_prepared_lora_slot(int slot, std::shared_ptr<const PreparedLora> prepared) {
        (void)slot;
        (void)prepared;
        throw_error(ErrorCode::internal, "load_prepared_lora_slot on a runner whose prepare_lora makes nothing");
    }

    // Runs one step; logits gets [logits_indices.size(), vocab_size] in f32, row-major.
    virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;

    // Runs one step for a sampler that needs whole rows only for some of them: argmax gets every logits
    // row's greedy token (first maximum on ties, NaN never wins), logits gets the rows flagged in
    // want_logits (one flag per logits row), packed in row order. A device runner computes the argmax
    // where the logits are and moves only the flagged rows: at batch 128 and a 32 k vocabulary, copying
    // every row and scanning it on the host costs about as much as the decode step itself.
    // `masks` constrains the argmax of grammar-constrained greedy rows (RowMasks).
    virtual void forward_sampled(const ForwardBatch& batch, std::span<const uint8_t> want_logits,
                                 std::vector<int32_t>& argmax, std::vector<float>& logits, const RowMasks& masks = {});
};

}  // namespace loradesk::runtime
