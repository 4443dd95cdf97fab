// adapter_config.json of a PEFT LoRA adapter: parsing, fail-closed validation of everything we cannot
// apply exactly, and PEFT's per-module rules (target/exclude matching, layers_to_transform, rank and
// alpha patterns, rsLoRA scale). Module paths are base-model paths: "model.layers.3.self_attn.q_proj".
// Tensors are not read here (adapter_loader does that); this file decides only what the config means.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loradesk::lora {

// target_modules / exclude_modules: a list (exact name or ".<entry>" suffix), a regex string
// (re.fullmatch), or the "all-linear" shorthand. `unset` matches nothing.
struct ModuleMatcher {
    enum class Kind { unset, names, regex, all_linear };
    Kind kind = Kind::unset;
    std::vector<std::string> names;
    std::string regex;

    bool matches(const std::string& module_path) const;
};

struct AdapterConfig {
    std::string peft_type = "LORA";
    std::string task_type;   // "CAUSAL_LM" or empty
    std::string base_model;  // base_model_name_or_path, informational
    int r = 8;
    double lora_alpha = 8;
    bool use_rslora = false;
    std::vector<std::pair<std::string, int>> rank_pattern;      // in file order (PEFT tries keys in order)
    std::vector<std::pair<std::string, double>> alpha_pattern;  // in file order
    ModuleMatcher target_modules;
    ModuleMatcher exclude_modules;
    std::vector<int> layers_to_transform;     // empty: every layer
    std::vector<std::string> layers_pattern;  // empty: PEFT's default layer-index regex
    // Only meaningful for GPT-2 style Conv1D bases. PEFT itself resets it to false for nn.Linear
    // (every projection of Llama/Qwen2/Qwen3/Mistral), so it never changes the math for our bases.
    bool fan_in_fan_out = false;

    int rank_for(const std::string& module_path) const;      // rank_pattern, else r
    double alpha_for(const std::string& module_path) const;  // alpha_pattern, else lora_alpha
    // alpha/sqrt(r) with use_rslora, else alpha/r; r and alpha per module.
    float scale_for(const std::string& module_path) const;
    // PEFT's check_target_module_exists: excluded? targeted? in layers_to_transform?
    // Always true when target_modules is unset (the tensors present then decide).
    bool targets(const std::string& module_path) const;
};

// PEFT get_pattern_key: the exact key first, else the first key (in file order) for which
// re.match(rf"(.*\.)?({key})$", module_path) matches; empty when none does.
std::string find_pattern_key(const std::vector<std::string>& keys, const std::string& module_path);

// Parses the JSON text of adapter_config.json. `source` names the file in error messages.
// Throws ExpectedError(corrupt_file) on malformed JSON or field types and ExpectedError(unsupported)
// on PEFT features we cannot serve exactly (DoRA, modules_to_save, bias, embedding/lm_head LoRA, ...).
AdapterConfig parse_adapter_config(const std::string& json_text, const std::string& source);
// Reads dir/adapter_config.json (ExpectedError(not_found) when absent).
AdapterConfig load_adapter_config(const std::string& dir);

}  // namespace loradesk::lora
