// The base model's weights: a validated, zero-copy view over the checkpoint's safetensors mappings.
// model_tensor_specs() is the single list of tensor names and shapes an architecture needs; the
// loader validates against it and the synthetic-checkpoint writer produces exactly it.
// Quantized checkpoints (config.json's quantization_config) keep their decoder projections as
// QuantizedLinear views; embeddings, norms, biases and lm_head stay float, as the Hub publishes them.
// Immutable after construction; safe to read from many threads.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/quantized_linear.h"
#include "model/safetensors.h"

namespace loradesk::model {

enum class TensorRole { embedding, projection, bias, norm };

struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
    TensorRole role = TensorRole::projection;
};

// Every tensor the architecture reads, in Hugging Face order (embed, layers, norm, lm_head). lm_head
// is omitted when the embeddings are tied (HF checkpoints leave it out).
std::vector<TensorSpec> model_tensor_specs(const ModelConfig& c);

// The projections of one layer that are stored quantized; null where the projection is a float TensorView.
struct LayerQuant {
    const QuantizedLinear* q = nullptr;
    const QuantizedLinear* k = nullptr;
    const QuantizedLinear* v = nullptr;
    const QuantizedLinear* o = nullptr;
    const QuantizedLinear* gate = nullptr;
    const QuantizedLinear* up = nullptr;
    const QuantizedLinear* down = nullptr;
};

// A projection pointer (q, k, v, o, gate, up, down) is null when that projection is in `quant` instead.
struct LayerWeights {
    const TensorView* input_norm = nullptr;  // [hidden]
    const TensorView* q = nullptr;           // [q_dim, hidden]
    const TensorView* k = nullptr;           // [kv_dim, hidden]
    const TensorView* v = nullptr;           // [kv_dim, hidden]
    const TensorView* o = nullptr;           // [hidden, q_dim]
    const TensorView* q_bias = nullptr;      // [q_dim]   (Qwen2, Llama attention_bias)
    const TensorView* k_bias = nullptr;      // [kv_dim]
    const TensorView* v_bias = nullptr;      // [kv_dim]
    const TensorView* o_bias = nullptr;      // [hidden]  (Llama attention_bias)
    const TensorView* q_norm = nullptr;      // [head_dim] (Qwen3)
    const TensorView* k_norm = nullptr;      // [head_dim]
    const TensorView* post_norm = nullptr;   // [hidden]
    const TensorView* gate = nullptr;        // [intermediate, hidden]
    const TensorView* up = nullptr;          // [intermediate, hidden]
    const TensorView* down = nullptr;        // [hidden, intermediate]
    const TensorView* gate_bias = nullptr;   // [intermediate] (Llama mlp_bias)
    const TensorView* up_bias = nullptr;     // [intermediate]
    const TensorView* down_bias = nullptr;   // [hidden]
    LayerQuant quant;
};

class ModelWeights {
  public:
    // Reads config.json and the safetensors of model_dir; throws Error naming the file and tensor for
    // anything missing, misshapen, not F32/F16/BF16 or (quantized checkpoints) not in the declared layout.
    explicit ModelWeights(const std::string& model_dir);

    const ModelConfig& config() const { return m_config; }
    const std::string& dir() const { return m_dir; }
    const TensorView& embed() const { return *m_embed; }      // [vocab, hidden]
    const TensorView& final_norm() const { return *m_norm; }  // [hidden]
    const TensorView& lm_head() const { return *m_lm_head; }  // [vocab, hidden]; embed() when tied
    const LayerWeights& layer(int i) const { return m_layers.at(std::size_t(i)); }
    int n_layers() const { return int(m_layers.size()); }

    int64_t parameter_count() const;  // tied embeddings counted once, like HF num_parameters()
    std::size_t bytes() const { return m_checkpoint->total_bytes(); }  // as stored: quantized bytes count as such
    bool quantized() const { return !m_quant.empty(); }
    std::size_t quantized_bytes() const;  // the packed projections' share of bytes()

  private:
    const TensorView* require(const TensorSpec& spec) const;
    const QuantizedLinear* bind_quantized(const TensorSpec& spec);

    std::string m_dir;
    ModelConfig m_config;
    std::unique_ptr<SafetensorsCheckpoint> m_checkpoint;
    const TensorView* m_embed = nullptr;
    const TensorView* m_norm = nullptr;
    const TensorView* m_lm_head = nullptr;
    std::vector<LayerWeights> m_layers;
    std::deque<QuantizedLinear> m_quant;  // stable addresses for LayerQuant
};

}  // namespace loradesk::model
