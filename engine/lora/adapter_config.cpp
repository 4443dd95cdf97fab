// adapter_config.json parsing and PEFT's module-matching rules (peft/tuners/tuners_utils.py
// check_target_module_exists, peft/utils/other.py get_pattern_key, tuners/lora/layer.py update_layer).
#include "lora/adapter_config.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "lora/peft_regex.h"

namespace loradesk::lora {
namespace {

using Json = nlohmann::ordered_json;

const char* const kLinearModules[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

bool ends_with_component(const std::string& path, const std::string& name) {
    return path.size() > name.size() && path.compare(path.size() - name.size(), name.size(), name) == 0 &&
           path[path.size() - name.size() - 1] == '.';
}

[[noreturn]] void bad_field(const std::string& source, const std::string& field, const std::string& expected) {
    throw_expected(ErrorCode::corrupt_file, source + ": field '" + field + "' must be " + expected);
}

[[noreturn]] void unsupported(const std::string& source, const std::string& what) {
    throw_expected(ErrorCode::unsupported, source + ": " + what);
}

// A field is "set" when present and neither null, false, nor an empty list/object/string.
bool is_set(const Json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_array() || it->is_object() || it->is_string())
        return !it->empty() && !(it->is_string() && it->get<std::string>().empty());
    return true;
}

ModuleMatcher parse_matcher(const Json& j, const char* key, const std::string& source) {
    ModuleMatcher m;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return m;
    if (it->is_string()) {
        std::string s = it->get<std::string>();
        if (s == "all-linear") {
            m.kind = ModuleMatcher::Kind::all_linear;
        } else {
            m.kind = ModuleMatcher::Kind::regex;
            m.regex = s;
            regex_fullmatch(s, "", source + " " + key);  // compile now so a bad regex fails at load
        }
        return m;
    }
    if (!it->is_array()) bad_field(source, key, "a list of module names, a regex string or null");
    m.kind = ModuleMatcher::Kind::names;
    for (auto& e : *it) {
        if (!e.is_string()) bad_field(source, key, "a list of module names (strings)");
        m.names.push_back(e.get<std::string>());
    }
    return m;
}

// An int that fits: JSON integers beyond int's range used to wrap (an r of 2^32 + 16 read as 16).
int to_int(const Json& v, const std::string& source, const std::string& key, const char* what) {
    if (!v.is_number_integer()) bad_field(source, key, what);
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<int>::max())
                               : (v.get<int64_t>() > std::numeric_limits<int>::max() ||
                                  v.get<int64_t>() < std::numeric_limits<int>::min()))
        bad_field(source, key, what);
    return int(v.get<int64_t>());
}

int get_int(const Json& j, const char* key, int fallback, const std::string& source) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    return to_int(*it, source, key, "an integer within 32 bits");
}

double get_number(const Json& j, const char* key, double fallback, const std::string& source) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_number()) bad_field(source, key, "a number");
    return it->get<double>();
}

std::string get_string(const Json& j, const char* key, const std::string& source) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_string()) bad_field(source, key, "a string");
    return it->get<std::string>();
}

bool get_bool(const Json& j, const char* key, const std::string& source) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    if (!it->is_boolean()) bad_field(source, key, "true or false");
    return it->get<bool>();
}

// Rejects every PEFT feature that would change the forward pass in a way a plain y += s·B(A x) on the
// seven projections cannot reproduce. Failing closed here is what keeps outputs exact.
void reject_unsupported(const Json& j, const std::string& source) {
    std::string peft_type = get_string(j, "peft_type", source);
    if (!peft_type.empty() && peft_type != "LORA")
        unsupported(source, "peft_type is '" + peft_type + "'; only LoRA adapters (peft_type LORA) are supported");
    std::string task = get_string(j, "task_type", source);
    if (!task.empty() && task != "CAUSAL_LM")
        unsupported(source, "task_type is '" + task + "'; only CAUSAL_LM adapters can be served for text generation");
    if (get_bool(j, "use_dora", source))
        unsupported(source,
                    "use_dora is true; DoRA adapters are not supported (merge the adapter into the base "
                    "model, or retrain without DoRA)");
    if (is_set(j, "modules_to_save"))
        unsupported(source,
                    "modules_to_save is set; adapters that replace whole modules (lm_head, embed_tokens, "
                    "score) are not supported");
    std::string bias = get_string(j, "bias", source);
    if (!bias.empty() && bias != "none")
        unsupported(source, "bias is '" + bias +
                                "'; adapters that trained base biases are not supported (only "
                                "bias \"none\")");
    if (get_bool(j, "lora_bias", source)) unsupported(source, "lora_bias is true; LoRA B biases are not supported");
    for (const char* key :
         {"layer_replication", "alora_invocation_tokens", "trainable_token_indices", "target_parameters"})
        if (is_set(j, key)) unsupported(source, std::string(key) + " is set; this PEFT feature is not supported");
}

// The LoRA scale alpha/r (or alpha/sqrt(r)) is applied as a float: an alpha that is finite as a double can
// still overflow it (1e300 / 1 is inf in float) and turn every output of the adapter into NaN. Real adapters
// use alphas of at most a few thousand, so a bound far above that refuses only broken or hostile files.
constexpr double kMaxLoraAlpha = 1e6;

double checked_alpha(double alpha, const std::string& source, const std::string& field) {
    if (!std::isfinite(alpha) || std::fabs(alpha) > kMaxLoraAlpha)
        bad_field(source, field, "a finite number of magnitude at most 1e6 (it scales the LoRA delta)");
    return alpha;
}

template <class T>
std::vector<std::pair<std::string, T>> parse_pattern(const Json& j, const char* key, const std::string& source) {
    std::vector<std::pair<std::string, T>> out;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return out;
    if (!it->is_object()) bad_field(source, key, "an object of module pattern -> value");
    for (auto& [k, v] : it->items()) {
        if constexpr (std::is_same_v<T, int>) {
            const int value = to_int(v, source, std::string(key) + "." + k, "a positive integer within 32 bits");
            if (value <= 0) bad_field(source, std::string(key) + "." + k, "a positive integer");
            out.emplace_back(k, value);
        } else {
            if (!v.is_number()) bad_field(source, std::string(key) + "." + k, "a number");
            out.emplace_back(k, checked_alpha(v.template get<double>(), source, std::string(key) + "." + k));
        }
        regex_match_group1("(.*\\.)?(" + k + ")$", "", source + " " + key);  // fail on a bad regex now
    }
    return out;
}

void parse_layers(const Json& j, AdapterConfig& c, const std::string& source) {
    if (auto it = j.find("layers_to_transform"); it != j.end() && !it->is_null()) {
        const char* what = "an integer or a list of integers within 32 bits";
        if (it->is_number_integer()) {
            c.layers_to_transform.push_back(to_int(*it, source, "layers_to_transform", what));
        } else if (it->is_array()) {
            for (auto& e : *it) c.layers_to_transform.push_back(to_int(e, source, "layers_to_transform", what));
        } else {
            bad_field(source, "layers_to_transform", "an integer or a list of integers");
        }
    }
    if (auto it = j.find("layers_pattern"); it != j.end() && !it->is_null()) {
        if (it->is_string()) {
            if (!it->get<std::string>().empty()) c.layers_pattern.push_back(it->get<std::string>());
        } else if (it->is_array()) {
            for (auto& e : *it) {
                if (!e.is_string()) bad_field(source, "layers_pattern", "a string or a list of strings");
                c.layers_pattern.push_back(e.get<std::string>());
            }
        } else {
            bad_field(source, "layers_pattern", "a string or a list of strings");
        }
    }
}

// Embedding and lm_head LoRA need a different forward (lookup of A, a vocab-sized B); refuse them
// here as well as in the tensors, so a config that asks for them fails even before its tensors load.
void reject_embedding_targets(const AdapterConfig& c, const std::string& source) {
    for (const char* name : {"model.embed_tokens", "lm_head"}) {
        bool hit = false;
        if (c.target_modules.kind == ModuleMatcher::Kind::names) {
            std::string short_name = std::string(name).substr(std::string(name).rfind('.') + 1);
            for (auto& n : c.target_modules.names) hit = hit || n == name || n == short_name;
        } else if (c.target_modules.kind == ModuleMatcher::Kind::regex) {
            hit = regex_fullmatch(c.target_modules.regex, name, source + " target_modules");
        }
        if (hit)
            unsupported(source, std::string("target_modules includes ") + name +
                                    "; LoRA on embeddings or lm_head is not supported (only the attention and MLP "
                                    "projections)");
    }
}

}  // namespace

bool ModuleMatcher::matches(const std::string& module_path) const {
    switch (kind) {
        case Kind::unset:
            return false;
        case Kind::all_linear:
            for (const char* n : kLinearModules)
                if (ends_with_component(module_path, n)) return true;
            return false;
        case Kind::regex:
            return regex_fullmatch(regex, module_path, "module regex");
        case Kind::names:
            for (auto& n : names)
                if (module_path == n || ends_with_component(module_path, n)) return true;
            return false;
    }
    return false;
}

std::string find_pattern_key(const std::vector<std::string>& keys, const std::string& module_path) {
    for (auto& k : keys)
        if (k == module_path) return k;
    for (auto& k : keys)
        if (regex_match_group1("(.*\\.)?(" + k + ")$", module_path, "rank/alpha pattern")) return k;
    return {};
}

int AdapterConfig::rank_for(const std::string& module_path) const {
    std::vector<std::string> keys;
    for (auto& [k, v] : rank_pattern) keys.push_back(k);
    std::string key = find_pattern_key(keys, module_path);
    for (auto& [k, v] : rank_pattern)
        if (k == key) return v;
    return r;
}

double AdapterConfig::alpha_for(const std::string& module_path) const {
    std::vector<std::string> keys;
    for (auto& [k, v] : alpha_pattern) keys.push_back(k);
    std::string key = find_pattern_key(keys, module_path);
    for (auto& [k, v] : alpha_pattern)
        if (k == key) return v;
    return lora_alpha;
}

float AdapterConfig::scale_for(const std::string& module_path) const {
    double rank = rank_for(module_path), alpha = alpha_for(module_path);
    return float(use_rslora ? alpha / std::sqrt(rank) : alpha / rank);
}

bool AdapterConfig::targets(const std::string& module_path) const {
    if (exclude_modules.kind != ModuleMatcher::Kind::unset && exclude_modules.matches(module_path)) return false;
    if (target_modules.kind == ModuleMatcher::Kind::unset) return true;
    if (target_modules.kind == ModuleMatcher::Kind::regex) return target_modules.matches(module_path);
    // PEFT applies layers_to_transform only to list targets that matched by suffix (not to exact
    // names or regexes); all-linear is expanded to a list before matching.
    bool exact = false;
    for (auto& n : target_modules.names) exact = exact || n == module_path;
    if (exact) return true;
    if (!target_modules.matches(module_path)) return false;
    if (layers_to_transform.empty()) return true;
    std::optional<std::string> index;
    if (layers_pattern.empty()) {
        index = regex_match_group1(R"(.*\.[^.]*\.(\d+)\.)", module_path, "layer index");
    } else {
        for (auto& p : layers_pattern) {
            index = regex_match_group1(".*\\." + p + "\\.(\\d+)\\.", module_path, "layers_pattern");
            if (index) break;
        }
    }
    if (!index || index->empty()) return false;
    // The index comes from a tensor name, that is from a file: digits beyond int are no layer we transform
    // (std::stoi threw std::out_of_range on them).
    int layer = 0;
    const char* end = index->data() + index->size();
    auto parsed = std::from_chars(index->data(), end, layer);
    if (parsed.ec != std::errc() || parsed.ptr != end) return false;
    for (int l : layers_to_transform)
        if (l == layer) return true;
    return false;
}

AdapterConfig parse_adapter_config(const std::string& json_text, const std::string& source) {
    Json j;
    try {
        j = Json::parse(json_text);
    } catch (const std::exception& e) {
        throw_expected(ErrorCode::corrupt_file, source + " is not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object()) throw_expected(ErrorCode::corrupt_file, source + " must contain a JSON object");
    reject_unsupported(j, source);
    AdapterConfig c;
    c.task_type = get_string(j, "task_type", source);
    c.base_model = get_string(j, "base_model_name_or_path", source);
    c.r = get_int(j, "r", 8, source);
    if (c.r <= 0) bad_field(source, "r", "a positive integer");
    c.lora_alpha = checked_alpha(get_number(j, "lora_alpha", 8, source), source, "lora_alpha");
    c.use_rslora = get_bool(j, "use_rslora", source);
    c.fan_in_fan_out = get_bool(j, "fan_in_fan_out", source);
    c.rank_pattern = parse_pattern<int>(j, "rank_pattern", source);
    c.alpha_pattern = parse_pattern<double>(j, "alpha_pattern", source);
    c.target_modules = parse_matcher(j, "target_modules", source);
    c.exclude_modules = parse_matcher(j, "exclude_modules", source);
    parse_layers(j, c, source);
    reject_embedding_targets(c, source);
    return c;
}

AdapterConfig load_adapter_config(const std::string& dir) {
    std::string path = (std::filesystem::path(dir) / "adapter_config.json").string();
    if (!std::filesystem::exists(path))
        throw_expected(ErrorCode::not_found, "no adapter_config.json in '" + dir + "' (is it a PEFT adapter folder?)");
    return parse_adapter_config(read_text_file(path), path);
}

}  // namespace loradesk::lora
