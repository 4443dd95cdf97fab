// Synthetic adapters: deterministic (seeded splitmix64) uniform A and B with PEFT's key names.
#include "lora/adapter_synth.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "lora/adapter_config.h"
#include "lora/adapter_loader.h"
#include "model/safetensors.h"

namespace loradesk::lora {
namespace {

using runtime::LoraModule;

struct SplitMix {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float bound) { return (float(next() >> 40) / float(1 << 24) * 2.0f - 1.0f) * bound; }
};

std::vector<LoraModule> all_modules() {
    std::vector<LoraModule> v;
    for (int m = 0; m < runtime::kNumLoraModules; ++m) v.push_back(LoraModule(m));
    return v;
}

std::string module_path(int layer, LoraModule m) {
    const char* group = int(m) <= int(LoraModule::o) ? "self_attn" : "mlp";
    return "model.layers." + std::to_string(layer) + "." + group + "." + std::string(runtime::lora_module_name(m));
}

}  // namespace

std::vector<LoraModule> parse_lora_targets(const std::string& csv) {
    std::vector<LoraModule> out;
    std::size_t i = 0;
    while (i <= csv.size()) {
        std::size_t j = std::min(csv.find(',', i), csv.size());
        std::string item = csv.substr(i, j - i);
        bool found = false;
        for (int m = 0; m < runtime::kNumLoraModules && !found; ++m)
            if (runtime::lora_module_name(LoraModule(m)) == item) {
                out.push_back(LoraModule(m));
                found = true;
            }
        if (!found)
            throw_expected(ErrorCode::invalid_argument,
                           "unknown LoRA target '" + item +
                               "' (use q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)");
        i = j + 1;
    }
    return out;
}

std::string synth_adapter_config_json(const SynthAdapterSpec& spec) {
    using Json = nlohmann::json;  // std::map order = PEFT's sort_keys=True
    Json j;
    for (const char* k : {"alora_invocation_tokens", "arrow_config", "auto_mapping", "corda_config", "eva_config",
                          "exclude_modules", "layer_replication", "layers_pattern", "megatron_config",
                          "modules_to_save", "revision", "target_parameters", "trainable_token_indices"})
        j[k] = nullptr;
    Json alpha = Json::object(), rank = Json::object();
    for (auto& [k, v] : spec.alpha_pattern) alpha[k] = v;
    for (auto& [k, v] : spec.rank_pattern) rank[k] = v;
    j["alpha_pattern"] = alpha;
    j["rank_pattern"] = rank;
    j["base_model_name_or_path"] = spec.base_model;
    j["bias"] = "none";
    j["ensure_weight_tying"] = false;
    j["fan_in_fan_out"] = spec.fan_in_fan_out;
    j["inference_mode"] = true;
    j["init_lora_weights"] = true;
    j["layers_to_transform"] = spec.layers.empty() ? Json(nullptr) : Json(spec.layers);
    j["loftq_config"] = Json::object();
    if (std::floor(spec.alpha) == spec.alpha && std::abs(spec.alpha) < 1e9)
        j["lora_alpha"] = int64_t(spec.alpha);
    else
        j["lora_alpha"] = spec.alpha;
    j["lora_bias"] = false;
    j["lora_dropout"] = 0.0;
    j["megatron_core"] = "megatron.core";
    j["peft_type"] = "LORA";
    j["peft_version"] = "0.17.1";
    j["qalora_group_size"] = 16;
    j["r"] = spec.rank;
    std::vector<std::string> targets;
    for (auto m : spec.targets.empty() ? all_modules() : spec.targets)
        targets.emplace_back(runtime::lora_module_name(m));
    j["target_modules"] = targets;
    j["task_type"] = "CAUSAL_LM";
    j["use_dora"] = false;
    j["use_qalora"] = false;
    j["use_rslora"] = spec.rslora;
    return j.dump(2) + "\n";
}

void synthesize_adapter(const model::ModelConfig& base, const SynthAdapterSpec& spec, const std::string& out_dir) {
    if (spec.rank <= 0) throw_expected(ErrorCode::invalid_argument, "--rank must be positive");
    for (int l : spec.layers)
        if (l < 0 || l >= base.n_layers)
            throw_expected(ErrorCode::invalid_argument, "layer " + std::to_string(l) +
                                                            " is out of range: the base model has " +
                                                            std::to_string(base.n_layers) + " layers");
    std::string config_text = synth_adapter_config_json(spec);
    // Parse our own output: the rank/alpha patterns then resolve exactly as the loader will.
    AdapterConfig cfg = parse_adapter_config(config_text, "synthesized adapter_config.json");
    std::vector<int> layers = spec.layers;
    if (layers.empty())
        for (int l = 0; l < base.n_layers; ++l) layers.push_back(l);
    SplitMix rng{spec.seed * 0x2545f4914f6cdd1dull + 1};
    model::SafetensorsWriter writer;
    for (int layer : layers) {
        for (LoraModule m : spec.targets.empty() ? all_modules() : spec.targets) {
            std::string path = module_path(layer, m);
            int r = cfg.rank_for(path), in = lora_in_features(base, m), out = lora_out_features(base, m);
            float scale = cfg.scale_for(path);
            // A ~ U(-1/sqrt(in), 1/sqrt(in)) as PEFT's kaiming init; B sized so that the entries of
            // scale·B·A have the requested standard deviation: var = scale² · r · var(A) · var(B).
            double target = spec.delta_std > 0 ? spec.delta_std : 0.2 / std::sqrt(double(in));
            float a_bound = float(1.0 / std::sqrt(double(in)));
            double var_a = double(a_bound) * a_bound / 3.0;
            float b_bound = float(std::sqrt(3.0 * target * target / (double(scale) * scale * r * var_a)));
            std::vector<float> a(std::size_t(r) * in), b(std::size_t(out) * r);
            for (auto& x : a) x = rng.uniform(a_bound);
            for (auto& x : b) x = rng.uniform(b_bound);
            writer.add_f32_as("base_model.model." + path + ".lora_A.weight", spec.dtype, {r, in}, a);
            writer.add_f32_as("base_model.model." + path + ".lora_B.weight", spec.dtype, {out, r}, b);
        }
    }
    std::filesystem::create_directories(out_dir);
    write_text_file((std::filesystem::path(out_dir) / "adapter_config.json").string(), config_text);
    writer.write((std::filesystem::path(out_dir) / "adapter_model.safetensors").string());
}

}  // namespace loradesk::lora
