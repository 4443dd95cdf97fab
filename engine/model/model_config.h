// Hugging Face config.json for the decoder-only families we serve (Llama, Qwen2, Qwen3, Mistral).
// parse_model_config() validates and normalises (head_dim default, GQA default, rope layouts old and
// new) and throws Error(unsupported / corrupt_file) with a message listing what is supported.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "model/quant_config.h"

namespace loradesk::model {

enum class Architecture { llama, qwen2, qwen3, mistral };

enum class RopeType { default_, linear, llama3 };

struct RopeScaling {
    RopeType type = RopeType::default_;
    float factor = 1.0f;
    float low_freq_factor = 1.0f;                 // llama3
    float high_freq_factor = 4.0f;                // llama3
    int original_max_position_embeddings = 8192;  // llama3
};

struct ModelConfig {
    Architecture arch = Architecture::llama;
    std::string architecture_name;  // "Qwen3ForCausalLM"
    std::string model_type;         // "qwen3"
    int vocab_size = 0;
    int hidden_size = 0;
    int intermediate_size = 0;
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int max_position_embeddings = 0;
    float rms_norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    RopeScaling rope_scaling;
    bool tie_word_embeddings = false;
    bool qkv_bias = false;  // Qwen2 (always), Llama with attention_bias
    bool o_bias = false;    // Llama with attention_bias
    bool mlp_bias = false;  // Llama mlp_bias
    bool qk_norm = false;   // Qwen3
    int bos_token_id = -1;
    std::vector<int> eos_token_ids;
    DType dtype = DType::bf16;  // torch_dtype / dtype
    QuantConfig quant;          // quantization_config (format none for bf16/f16/f32 checkpoints)

    int q_dim() const { return n_heads * head_dim; }
    int kv_dim() const { return n_kv_heads * head_dim; }
};

std::string architecture_name(Architecture a);
ModelConfig parse_model_config(const nlohmann::json& j);      // throws Error
ModelConfig load_model_config(const std::string& model_dir);  // reads model_dir/config.json
nlohmann::json model_config_to_json(const ModelConfig& c);    // the HF config.json we write
// End-of-sequence ids: config.json's eos_token_id ∪ generation_config.json's (when present), sorted.
// Throws Error(corrupt_file) when generation_config.json is not valid JSON.
std::vector<int> load_eos_token_ids(const std::string& model_dir, const ModelConfig& c);

}  // namespace loradesk::model
