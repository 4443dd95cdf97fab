// Preset table and checkpoint synthesis; see synth_model.h.
#include "model/synth_model.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"
#include "core/mapped_file.h"
#include "model/checkpoint_stream_writer.h"
#include "model/model_weights.h"
#include "model/quantize.h"
#include "model/synth_tokenizer.h"

namespace loradesk::model {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Preset {
    const char* name;
    Architecture arch;
    int hidden, intermediate, layers, heads, kv_heads, head_dim;
    int vocab;  // 0: fit the tokenizer
    int max_pos;
    float theta, eps;
    bool tie;
    RopeScaling rope;
};

constexpr RopeScaling kNoScaling{};
constexpr float kResidualGain = 4.0f;
constexpr RopeScaling llama3_rope(float factor, int original) {
    return {RopeType::llama3, factor, 1.0f, 4.0f, original};
}

const Preset kPresets[] = {
    {"tiny", Architecture::qwen3, 128, 384, 3, 4, 2, 48, 0, 4096, 1e6f, 1e-6f, true, kNoScaling},
    {"tiny-qwen2", Architecture::qwen2, 128, 352, 2, 4, 2, 32, 0, 4096, 1e6f, 1e-6f, true, kNoScaling},
    {"tiny-llama", Architecture::llama, 128, 320, 2, 4, 1, 32, 0, 8192, 5e5f, 1e-5f, false, llama3_rope(8.0f, 1024)},
    {"tiny-mistral", Architecture::mistral, 128, 256, 2, 8, 2, 16, 0, 4096, 1e6f, 1e-5f, false, kNoScaling},
    // The smallest shapes the block-scaled fp8 GEMM takes (widths multiples of 512), for its tests.
    {"small", Architecture::qwen3, 512, 1024, 2, 4, 2, 128, 0, 4096, 1e6f, 1e-6f, true, kNoScaling},
    {"qwen3-0.6b", Architecture::qwen3, 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1e6f, 1e-6f, true, kNoScaling},
    {"qwen3-8b", Architecture::qwen3, 4096, 12288, 36, 32, 8, 128, 151936, 40960, 1e6f, 1e-6f, false, kNoScaling},
    {"llama-3.2-1b", Architecture::llama, 2048, 8192, 16, 32, 8, 64, 128256, 131072, 5e5f, 1e-5f, true,
     llama3_rope(32.0f, 8192)},
    {"llama-3.1-8b", Architecture::llama, 4096, 14336, 32, 32, 8, 128, 128256, 131072, 5e5f, 1e-5f, false,
     llama3_rope(8.0f, 8192)},
    {"qwen2.5-0.5b", Architecture::qwen2, 896, 4864, 24, 14, 2, 64, 151936, 32768, 1e6f, 1e-6f, true, kNoScaling},
    // 7 query heads per KV head: the decode attention's 8-row kernels.
    {"qwen2.5-7b", Architecture::qwen2, 3584, 18944, 28, 28, 4, 128, 152064, 32768, 1e6f, 1e-6f, false, kNoScaling},
    // Llama-2-7B shapes (MHA), the S-LoRA paper's S1/S2 base.
    {"llama-7b", Architecture::llama, 4096, 11008, 32, 32, 32, 128, 32000, 4096, 1e4f, 1e-5f, false, kNoScaling},
    {"mistral-7b", Architecture::mistral, 4096, 14336, 32, 32, 8, 128, 32768, 32768, 1e6f, 1e-5f, false, kNoScaling},
};

const char* model_type(Architecture a) {
    switch (a) {
        case Architecture::llama:
            return "llama";
        case Architecture::qwen2:
            return "qwen2";
        case Architecture::qwen3:
            return "qwen3";
        case Architecture::mistral:
            return "mistral";
    }
    return "";
}

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t hash_name(const std::string& s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// Reads a copied tokenizer: the largest id in vocab and added_tokens, and the ids of its eos/bos.
void inspect_tokenizer(const json& tok, const json& cfg, int* n_tokens, int* bos, int* eos) {
    int max_id = -1;
    std::map<std::string, int> ids;
    if (tok.contains("model") && tok["model"].contains("vocab") && tok["model"]["vocab"].is_object())
        for (auto& [k, v] : tok["model"]["vocab"].items())
            if (v.is_number_integer()) max_id = std::max(max_id, v.get<int>()), ids[k] = v.get<int>();
    if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
        for (const json& a : tok["added_tokens"])
            if (a.contains("id") && a["id"].is_number_integer() && a.contains("content") && a["content"].is_string())
                max_id = std::max(max_id, a["id"].get<int>()),
                ids[a["content"].get<std::string>()] = a["id"].get<int>();
    if (max_id < 0)
        throw_expected(ErrorCode::corrupt_file, "tokenizer.json has no vocabulary (model.vocab) or added_tokens");
    *n_tokens = max_id + 1;
    auto token_id = [&](const char* key) {
        if (!cfg.contains(key)) return -1;
        const json& v = cfg[key];
        std::string s = v.is_string()                            ? v.get<std::string>()
                        : v.is_object() && v.contains("content") ? v["content"].get<std::string>()
                                                                 : "";
        auto it = ids.find(s);
        return it == ids.end() ? -1 : it->second;
    };
    *bos = token_id("bos_token");
    *eos = token_id("eos_token");
}

float init_value(TensorRole role, int64_t fan_in, int hidden, uint64_t bits) {
    const double u = double(bits >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // uniform [-1, 1), std 1/sqrt(3)
    const double kSqrt3 = 1.7320508075688772;
    switch (role) {
        case TensorRole::embedding:
            return float(u * kSqrt3 * 2.0 / std::sqrt(double(hidden)));  // tied logits std ~2
        case TensorRole::projection:
            return float(u * kSqrt3 / std::sqrt(double(fan_in)));
        case TensorRole::bias:
            return float(u * 0.05);
        case TensorRole::norm:
            return float(1.0 + 0.1 * u);
    }
    return 0.0f;
}

// "model.layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj"
std::string module_of(const std::string& weight_name) {
    return weight_name.substr(0, weight_name.size() - std::string_view(".weight").size());
}

void round_to(DType dtype, std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * dtype_size(dtype));
    convert_from_f32(v.data(), v.size(), dtype, bytes.data());
    convert_to_f32(bytes.data(), dtype, v.size(), v.data());
}

// Hands out a quantized projection's packed tensors one at a time: the projection is quantized when its first
// part is asked for and forgotten after its last, so at most a shard's worth of packed tensors is held.
class PackedParts {
  public:
    using Quantize = std::function<std::vector<PackedTensor>(std::size_t)>;
    explicit PackedParts(Quantize quantize) : m_quantize(std::move(quantize)) {}

    std::vector<uint8_t> take(std::size_t spec, std::size_t part) {
        auto it = m_held.find(spec);
        if (it == m_held.end()) it = m_held.emplace(spec, Held{m_quantize(spec), 0}).first;
        std::vector<uint8_t> bytes = std::move(it->second.parts[part].bytes);
        if (++it->second.taken == it->second.parts.size()) m_held.erase(it);
        return bytes;
    }

  private:
    struct Held {
        std::vector<PackedTensor> parts;
        std::size_t taken = 0;
    };
    Quantize m_quantize;
    std::map<std::size_t, Held> m_held;
};

}  // namespace

std::vector<std::string> synth_preset_names() {
    std::vector<std::string> out;
    for (const Preset& p : kPresets) out.push_back(p.name);
    return out;
}

ModelConfig synth_preset_config(const std::string& preset, int n_tokens) {
    const Preset* p = nullptr;
    for (const Preset& q : kPresets)
        if (preset == q.name) p = &q;
    if (!p) {
        std::string names;
        for (const std::string& n : synth_preset_names()) names += (names.empty() ? "" : ", ") + n;
        throw_expected(ErrorCode::invalid_argument, "unknown preset '" + preset + "'; presets: " + names);
    }
    ModelConfig c;
    c.arch = p->arch;
    c.architecture_name = architecture_name(p->arch);
    c.model_type = model_type(p->arch);
    const int fitted = (n_tokens + 63) / 64 * 64;
    c.vocab_size = p->vocab > 0 ? std::max(p->vocab, fitted) : fitted;
    c.hidden_size = p->hidden;
    c.intermediate_size = p->intermediate;
    c.n_layers = p->layers;
    c.n_heads = p->heads;
    c.n_kv_heads = p->kv_heads;
    c.head_dim = p->head_dim;
    c.max_position_embeddings = p->max_pos;
    c.rms_norm_eps = p->eps;
    c.rope_theta = p->theta;
    c.rope_scaling = p->rope;
    c.tie_word_embeddings = p->tie;
    c.qkv_bias = p->arch == Architecture::qwen2;
    c.qk_norm = p->arch == Architecture::qwen3;
    return c;
}

std::vector<std::string> synth_quant_names() {
    return {"fp8", "fp8-tensor", "fp8-channel", "awq", "gptq", "gptq-actorder"};
}

QuantConfig synth_quant_config(const std::string& name, const ModelConfig& c) {
    QuantConfig q;
    if (name == "fp8") {
        q.format = QuantFormat::fp8_block;
        q.bits = 8;
        q.block_out = q.block_in = 128;
    } else if (name == "fp8-tensor" || name == "fp8-channel") {
        q.format = name == "fp8-tensor" ? QuantFormat::fp8_tensor : QuantFormat::fp8_channel;
        q.bits = 8;
        q.not_converted = {"lm_head"};
    } else if (name == "awq") {
        q.format = QuantFormat::awq;
        q.bits = 4;
        q.group_size = 128;
        while (q.group_size > 32 &&
               (c.hidden_size % q.group_size || c.q_dim() % q.group_size || c.intermediate_size % q.group_size))
            q.group_size /= 2;
    } else if (name == "gptq" || name == "gptq-actorder") {
        q.format = QuantFormat::gptq;
        q.bits = 4;
        q.group_size = 128;
        q.desc_act = name == "gptq-actorder";
    } else {
        std::string names;
        for (const std::string& n : synth_quant_names()) names += (names.empty() ? "" : ", ") + n;
        throw_expected(ErrorCode::invalid_argument, "unknown quantization '" + name + "'; known: " + names);
    }
    return q;
}

ModelConfig synth_model(const SynthOptions& o) {
    if (o.out_dir.empty())
        throw_expected(ErrorCode::invalid_argument, "synth-model needs an output directory (--out DIR)");
    if (!is_float_dtype(o.dtype))
        throw_expected(ErrorCode::invalid_argument, "synthetic weights must be bf16, f16 or f32");
    json tok, tok_cfg;
    int n_tokens = 0, bos = -1, eos = -1;
    if (o.tokenizer_dir.empty()) {
        SynthTokenizer t = make_synth_tokenizer();
        tok = std::move(t.tokenizer);
        tok_cfg = std::move(t.tokenizer_config);
        n_tokens = t.n_tokens, bos = t.bos_id, eos = t.eos_id;
    } else {
        try {
            tok = json::parse(read_text_file((fs::path(o.tokenizer_dir) / "tokenizer.json").string()));
            tok_cfg = json::parse(read_text_file((fs::path(o.tokenizer_dir) / "tokenizer_config.json").string()));
        } catch (const json::exception& e) {
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer files in '" + o.tokenizer_dir + "' are not valid JSON: " + e.what());
        }
        inspect_tokenizer(tok, tok_cfg, &n_tokens, &bos, &eos);
    }
    ModelConfig c = synth_preset_config(o.preset, n_tokens);
    c.dtype = o.dtype;
    if (!o.quant.empty()) c.quant = synth_quant_config(o.quant, c);
    c.bos_token_id = bos;
    if (eos >= 0) c.eos_token_ids = {eos};
    fs::create_directories(o.out_dir);
    const fs::path dir(o.out_dir);
    write_text_file((dir / "config.json").string(), model_config_to_json(c).dump(2) + "\n");
    json gen = {{"_from_model_config", true},
                {"bos_token_id", bos >= 0 ? json(bos) : json(nullptr)},
                {"eos_token_id", eos >= 0 ? json(eos) : json(nullptr)},
                {"transformers_version", "4.51.3"}};
    write_text_file((dir / "generation_config.json").string(), gen.dump(2) + "\n");
    write_text_file((dir / "tokenizer.json").string(), tok.dump(2));
    write_text_file((dir / "tokenizer_config.json").string(), tok_cfg.dump(2) + "\n");

    const std::vector<TensorSpec> specs = model_tensor_specs(c);
    std::vector<uint64_t> seeds;
    for (const TensorSpec& s : specs) seeds.push_back(splitmix64(o.seed ^ hash_name(s.name)));
    // Values of spec `si`, elements [first, first + count), as f32.
    auto generate = [&](std::size_t si, int64_t first, int64_t count, float* out) {
        const TensorSpec& s = specs[si];
        const int64_t fan_in = s.shape.size() == 2 ? s.shape[1] : 1;
        // Projections that write the residual stream get a gain so that it outgrows the token's own
        // embedding; with tied embeddings that embedding otherwise dominates the logits and greedy
        // decoding repeats the last token forever.
        const bool residual_writer = s.name.ends_with("o_proj.weight") || s.name.ends_with("down_proj.weight");
        const float gain = residual_writer ? kResidualGain : 1.0f;
        for (int64_t e = 0; e < count; ++e)
            out[e] = gain * init_value(s.role, fan_in, c.hidden_size, splitmix64(seeds[si] + uint64_t(first + e)));
    };
    // Quantized projections become several packed tensors; each stream tensor remembers its spec and part.
    std::vector<StreamTensor> tensors;
    std::vector<std::pair<std::size_t, std::size_t>> origin;  // (spec, part)
    for (std::size_t si = 0; si < specs.size(); ++si) {
        const TensorSpec& s = specs[si];
        if (s.role == TensorRole::projection && s.name.starts_with("model.layers.") &&
            c.quant.quantizes(module_of(s.name))) {
            const auto parts = quantized_tensor_specs(c.quant, module_of(s.name), s.shape[0], s.shape[1]);
            for (std::size_t p = 0; p < parts.size(); ++p) {
                tensors.push_back({parts[p].name, parts[p].dtype, parts[p].shape, true});
                origin.emplace_back(si, p);
            }
        } else {
            tensors.push_back({s.name, o.dtype, s.shape});
            origin.emplace_back(si, 0);
        }
    }
    auto fill = [&](std::size_t i, int64_t first, int64_t count, float* out) {
        generate(origin[i].first, first, count, out);
    };
    PackedParts packed([&](std::size_t si) {
        const TensorSpec& s = specs[si];
        std::vector<float> w(std::size_t(s.shape[0] * s.shape[1]));
        generate(si, 0, int64_t(w.size()), w.data());
        round_to(o.dtype, w);  // quantize the weights as a bf16 checkpoint would hold them
        return quantize_linear(c.quant, module_of(s.name), w.data(), s.shape[0], s.shape[1], seeds[si]);
    });
    auto raw_fill = [&](std::size_t i) { return packed.take(origin[i].first, origin[i].second); };
    write_streamed_checkpoint(o.out_dir, "model", tensors, fill, o.max_shard_bytes, raw_fill);
    return c;
}

}  // namespace loradesk::model
