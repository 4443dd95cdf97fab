// CudaRunner: the GPU ModelRunner. bf16 weights (f16/f32 checkpoints converted at load), cuBLAS GEMMs with
// f32 accumulation for every projection and lm_head, kernels/ for the rest, paged bf16 KV, SGMV LoRA over
// device slots. Device memory (weights, KV pool, LoRA slots, workspace) is allocated up front and reported
// by memory(). CUDA types stay behind the pimpl. Not thread-safe: the engine loop is its only caller.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/model_runner.h"

namespace loradesk::runtime::cuda {

// True when a CUDA driver and at least one GPU are usable (for --device auto).
bool cuda_device_available();

class CudaRunner final : public ModelRunner {
public:
    // Loads model_dir onto GPU `device`. Throws Error(unavailable) without a driver/GPU or when the
    // weights do not fit, Error(corrupt_file/unsupported) for a bad checkpoint.
    explicit CudaRunner(const std::string& model_dir, int device = 0);
    ~CudaRunner() override;

    const model::ModelConfig& config() const override;
    std::string device_name() const override;
    MemoryReport memory() const override;

    std::size_t kv_page_bytes(int page_size) const override;
    void allocate_kv(int n_pages, int page_size) override;

    void configure_lora_slots(int n_slots, int max_rank) override;
    void load_lora_slot(int slot, const LoraWeights& weights) override;
    void clear_lora_slot(int slot) override;

    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

    // Greedy path: runs the step and returns argmax token ids of the logits rows (argmax on the device,
    // only n_logits ints copied back).
    void forward_greedy(const ForwardBatch& batch, std::vector<int32_t>& tokens);

    struct Impl;

private:
    std::unique_ptr<Impl> m;
};

}  // namespace loradesk::runtime::cuda
