// Validates a checkpoint against model_tensor_specs() and wires the per-layer views.
#include "model/model_weights.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "core/error.h"

namespace loradesk::model {
namespace {

std::string layer_prefix(int i) { return "model.layers." + std::to_string(i) + "."; }

// "model.layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj"
std::string module_of(const std::string& weight_name) {
    return weight_name.substr(0, weight_name.size() - std::string_view(".weight").size());
}

std::string fmt_shape(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

std::vector<TensorSpec> model_tensor_specs(const ModelConfig& c) {
    const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), f = c.intermediate_size, v = c.vocab_size;
    std::vector<TensorSpec> out;
    out.push_back({"model.embed_tokens.weight", {v, h}, TensorRole::embedding});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string p = layer_prefix(i);
        out.push_back({p + "input_layernorm.weight", {h}, TensorRole::norm});
        out.push_back({p + "self_attn.q_proj.weight", {q, h}, TensorRole::projection});
        if (c.qkv_bias) out.push_back({p + "self_attn.q_proj.bias", {q}, TensorRole::bias});
        out.push_back({p + "self_attn.k_proj.weight", {kv, h}, TensorRole::projection});
        if (c.qkv_bias) out.push_back({p + "self_attn.k_proj.bias", {kv}, TensorRole::bias});
        out.push_back({p + "self_attn.v_proj.weight", {kv, h}, TensorRole::projection});
        if (c.qkv_bias) out.push_back({p + "self_attn.v_proj.bias", {kv}, TensorRole::bias});
        out.push_back({p + "self_attn.o_proj.weight", {h, q}, TensorRole::projection});
        if (c.o_bias) out.push_back({p + "self_attn.o_proj.bias", {h}, TensorRole::bias});
        if (c.qk_norm) {
            out.push_back({p + "self_attn.q_norm.weight", {c.head_dim}, TensorRole::norm});
            out.push_back({p + "self_attn.k_norm.weight", {c.head_dim}, TensorRole::norm});
        }
        out.push_back({p + "post_attention_layernorm.weight", {h}, TensorRole::norm});
        out.push_back({p + "mlp.gate_proj.weight", {f, h}, TensorRole::projection});
        if (c.mlp_bias) out.push_back({p + "mlp.gate_proj.bias", {f}, TensorRole::bias});
        out.push_back({p + "mlp.up_proj.weight", {f, h}, TensorRole::projection});
        if (c.mlp_bias) out.push_back({p + "mlp.up_proj.bias", {f}, TensorRole::bias});
        out.push_back({p + "mlp.down_proj.weight", {h, f}, TensorRole::projection});
        if (c.mlp_bias) out.push_back({p + "mlp.down_proj.bias", {h}, TensorRole::bias});
    }
    out.push_back({"model.norm.weight", {h}, TensorRole::norm});
    if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {v, h}, TensorRole::projection});
    return out;
}

const TensorView* ModelWeights::require(const TensorSpec& spec) const {
    const TensorView* t = m_checkpoint->find(spec.name);
    if (!t)
        throw_expected(ErrorCode::corrupt_file,
                       fmt::format("model '{}' ({}) has no tensor '{}' {}; the checkpoint is incomplete or for another "
                                   "architecture",
                                   m_dir, m_config.architecture_name, spec.name, fmt_shape(spec.shape)));
    if (t->shape != spec.shape)
        throw_expected(ErrorCode::corrupt_file,
                       fmt::format("tensor '{}' in '{}' has shape {} but config.json implies {} (config.json and the "
                                   "weights disagree)",
                                   spec.name, t->file, t->shape_string(), fmt_shape(spec.shape)));
    if (!is_float_dtype(t->dtype))
        throw_expected(ErrorCode::unsupported,
                       fmt::format("tensor '{}' in '{}' has dtype {}; unquantized tensors must be F32, F16 or BF16 "
                                   "(a quantized checkpoint needs its quantization_config in config.json)",
                                   spec.name, t->file, dtype_name(t->dtype)));
    return t;
}

const QuantizedLinear* ModelWeights::bind_quantized(const TensorSpec& spec) {
    const std::string module = module_of(spec.name);
    auto find = [&](const std::string& name) { return m_checkpoint->find(name); };
    try {
        m_quant.push_back(bind_quantized_linear(find, m_config.quant, module, spec.shape[0], spec.shape[1]));
    } catch (const Error& e) {
        throw_expected(e.code(), fmt::format("model '{}': {}", m_dir, e.what()));
    }
    return &m_quant.back();
}

ModelWeights::ModelWeights(const std::string& model_dir) : m_dir(model_dir), m_config(load_model_config(model_dir)) {
    m_checkpoint = std::make_unique<SafetensorsCheckpoint>(model_dir, "model");
    std::map<std::string, const TensorView*> found;
    std::map<std::string, const QuantizedLinear*> quantized;
    for (const TensorSpec& spec : model_tensor_specs(m_config)) {
        // Only decoder-layer projections are quantized; lm_head stays float in every format we load.
        const bool layer_projection = spec.role == TensorRole::projection && spec.name.starts_with("model.layers.");
        if (layer_projection && m_config.quant.quantizes(module_of(spec.name)))
            quantized[spec.name] = bind_quantized(spec);
        else
            found[spec.name] = require(spec);
    }
    auto get = [&](const std::string& name) -> const TensorView* {
        auto it = found.find(name);
        return it == found.end() ? nullptr : it->second;
    };
    auto get_quant = [&](const std::string& name) -> const QuantizedLinear* {
        auto it = quantized.find(name);
        return it == quantized.end() ? nullptr : it->second;
    };
    m_embed = get("model.embed_tokens.weight");
    m_norm = get("model.norm.weight");
    m_lm_head = m_config.tie_word_embeddings ? m_embed : get("lm_head.weight");
    m_layers.resize(std::size_t(m_config.n_layers));
    for (int i = 0; i < m_config.n_layers; ++i) {
        const std::string p = layer_prefix(i);
        LayerWeights& l = m_layers[std::size_t(i)];
        l.input_norm = get(p + "input_layernorm.weight");
        l.q = get(p + "self_attn.q_proj.weight");
        l.k = get(p + "self_attn.k_proj.weight");
        l.v = get(p + "self_attn.v_proj.weight");
        l.o = get(p + "self_attn.o_proj.weight");
        l.q_bias = get(p + "self_attn.q_proj.bias");
        l.k_bias = get(p + "self_attn.k_proj.bias");
        l.v_bias = get(p + "self_attn.v_proj.bias");
        l.o_bias = get(p + "self_attn.o_proj.bias");
        l.q_norm = get(p + "self_attn.q_norm.weight");
        l.k_norm = get(p + "self_attn.k_norm.weight");
        l.post_norm = get(p + "post_attention_layernorm.weight");
        l.gate = get(p + "mlp.gate_proj.weight");
        l.up = get(p + "mlp.up_proj.weight");
        l.down = get(p + "mlp.down_proj.weight");
        l.gate_bias = get(p + "mlp.gate_proj.bias");
        l.up_bias = get(p + "mlp.up_proj.bias");
        l.down_bias = get(p + "mlp.down_proj.bias");
        l.quant.q = get_quant(p + "self_attn.q_proj.weight");
        l.quant.k = get_quant(p + "self_attn.k_proj.weight");
        l.quant.v = get_quant(p + "self_attn.v_proj.weight");
        l.quant.o = get_quant(p + "self_attn.o_proj.weight");
        l.quant.gate = get_quant(p + "mlp.gate_proj.weight");
        l.quant.up = get_quant(p + "mlp.up_proj.weight");
        l.quant.down = get_quant(p + "mlp.down_proj.weight");
    }
}

std::size_t ModelWeights::quantized_bytes() const {
    std::size_t n = 0;
    for (const QuantizedLinear& q : m_quant) n += q.bytes();
    return n;
}

int64_t ModelWeights::parameter_count() const {
    int64_t n = 0;
    for (const TensorSpec& spec : model_tensor_specs(m_config)) {
        int64_t e = 1;
        for (int64_t d : spec.shape) e *= d;
        n += e;
    }
    return n;
}

}  // namespace loradesk::model
