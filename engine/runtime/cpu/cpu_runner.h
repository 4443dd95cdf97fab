// CpuRunner: the reference ModelRunner. fp32 math over the checkpoint's own dtype (mmap, zero-copy;
// quantized projections are dequantized to f32 once at load),
// paged f32 KV cache, per-token LoRA (y += scale * B (A x) with each sequence's slot), multi-threaded
// over output rows and attention heads. Every CUDA result is checked against it.
// Not thread-safe: one caller (the engine loop) at a time, like every ModelRunner.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/dequantized_layers.h"
#include "model/model_weights.h"
#include "runtime/model_runner.h"

namespace loradesk::runtime::cpu {

class CpuRunner final : public ModelRunner {
  public:
    // threads: 0 = hardware concurrency. Throws Error for an unreadable or invalid model directory.
    CpuRunner(const std::string& model_dir, int threads);
    ~CpuRunner() override;

    const model::ModelConfig& config() const override { return m_weights.config(); }
    std::string device_name() const override;
    MemoryReport memory() const override;

    std::size_t kv_page_bytes(int page_size) const override;
    void allocate_kv(int n_pages, int page_size) override;

    void configure_lora_slots(int n_slots, int max_rank) override;
    void load_lora_slot(int slot, const LoraWeights& weights) override;
    void clear_lora_slot(int slot) override;

    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

    const model::ModelWeights& weights() const { return m_weights; }
    int n_kv_pages() const { return m_n_pages; }

    // W8A8 for fp8 checkpoints, as transformers (FineGrainedFP8) and vLLM run them and as the CUDA runner runs them
    // from kFp8GemmMinTokens / kFp8ChannelGemmMinTokens tokens (runtime/cuda/quant_route.h): in steps of at least
    // min_tokens tokens, a call site whose projections are all stored fp8 multiplies its input rounded to e4m3 per
    // token and 128 columns (128x128-block weights) or per token (per-channel / per-tensor weights), scale amax / 448,
    // instead of the input itself; LoRA still reads the input. 0 (the default): never, the weight-only oracle. The CUDA
    // tests measure with it how far W8A8 alone moves the logits.
    void set_fp8_activation_rounding(int min_tokens) { m_fp8_act_min_tokens = min_tokens; }

  private:
    struct Scratch;
    void attention_block(int layer, const ForwardBatch& b, const std::vector<int>& token_slot, Scratch& s);
    void mlp_block(int layer, int n, const std::vector<int>& token_slot, Scratch& s);
    // y[t] += scale * B (A x[t]) for every token whose slot adapts this module.
    void apply_lora(LoraModule m, int layer, const float* x, int in, int n, float* y, int out,
                    const std::vector<int>& token_slot);
    std::pair<int, int> module_dims(LoraModule m) const;  // (in_features, out_features)
    // What a call site's projections multiply: x, or x rounded into `rounded` under set_fp8_activation_rounding.
    const float* projection_input(std::initializer_list<const model::QuantizedLinear*> site, const float* x, int n,
                                  int dim, std::vector<float>& rounded) const;

    model::ModelWeights m_weights;
    ThreadPool m_pool;
    model::DequantizedLayers m_layers;  // after m_pool: built with it
    std::vector<float> m_inv_freq;
    int m_n_pages = 0;
    int m_page_size = 0;
    std::vector<std::vector<float>> m_k_cache, m_v_cache;  // per layer
    int m_max_rank = 0;
    std::vector<std::unique_ptr<LoraWeights>> m_slots;  // index = slot; [0] always empty
    int m_fp8_act_min_tokens = 0;
};

}  // namespace loradesk::runtime::cpu
