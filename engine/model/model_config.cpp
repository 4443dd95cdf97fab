// Parses and writes Hugging Face config.json for Llama, Qwen2, Qwen3 and Mistral. Everything the
// runners depend on is normalised here (head_dim, GQA, rope layout old and new, bias flags) so that
// no other code reads config.json; options we cannot serve exactly are rejected with a clear error.
#include "model/model_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/mapped_file.h"

namespace loradesk::model {
namespace {

using json = nlohmann::json;

constexpr const char* kSupportedArchitectures =
    "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM";
constexpr const char* kSupportedRope = "default, linear, llama3";

[[noreturn]] void unsupported(const std::string& what) {
    throw_expected(ErrorCode::unsupported, "config.json: " + what);
}
[[noreturn]] void malformed(const std::string& what) {
    throw_expected(ErrorCode::corrupt_file, "config.json: " + what);
}

bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

int get_positive_int(const json& j, const char* key) {
    if (!present(j, key)) malformed(std::string("missing required field \"") + key + "\"");
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<long long>() <= 0 || v.get<long long>() > (1LL << 30))
        malformed(std::string("\"") + key + "\" must be a positive integer, got " + v.dump());
    return v.get<int>();
}

int get_int_or(const json& j, const char* key, int fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_number_integer())
        malformed(std::string("\"") + key + "\" must be an integer, got " + j.at(key).dump());
    return j.at(key).get<int>();
}

double get_number_or(const json& j, const char* key, double fallback, const char* where = "") {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_number())
        malformed(std::string(where) + "\"" + key + "\" must be a number, got " + j.at(key).dump());
    return j.at(key).get<double>();
}

bool get_bool_or(const json& j, const char* key, bool fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_boolean())
        malformed(std::string("\"") + key + "\" must be true or false, got " + j.at(key).dump());
    return j.at(key).get<bool>();
}

Architecture parse_architecture(const json& j, std::string* name) {
    if (!present(j, "architectures") || !j.at("architectures").is_array() || j.at("architectures").empty() ||
        !j.at("architectures")[0].is_string())
        malformed(std::string("missing \"architectures\" (a list naming the model class); supported: ") +
                  kSupportedArchitectures);
    *name = j.at("architectures")[0].get<std::string>();
    if (*name == "LlamaForCausalLM") return Architecture::llama;
    if (*name == "Qwen2ForCausalLM") return Architecture::qwen2;
    if (*name == "Qwen3ForCausalLM") return Architecture::qwen3;
    if (*name == "MistralForCausalLM") return Architecture::mistral;
    unsupported("architecture '" + *name + "' is not supported; supported: " + kSupportedArchitectures);
}

// Reads one rope block: transformers v4 `rope_scaling` or v5 `rope_parameters` (which also carries
// rope_theta). Either may spell the type `rope_type` or, in old configs, `type`.
void parse_rope_block(const json& r, const char* block, ModelConfig& c) {
    if (!r.is_object()) malformed(std::string("\"") + block + "\" must be an object or null, got " + r.dump());
    std::string where = std::string(block) + ".";
    std::string type = "default";
    for (const char* key : {"rope_type", "type"}) {
        if (present(r, key)) {
            if (!r.at(key).is_string()) malformed(where + key + " must be a string");
            type = r.at(key).get<std::string>();
            break;
        }
    }
    if (present(r, "rope_theta")) c.rope_theta = float(get_number_or(r, "rope_theta", c.rope_theta, where.c_str()));
    RopeScaling& s = c.rope_scaling;
    auto factor = [&] {
        double f = get_number_or(r, "factor", 0.0, where.c_str());
        if (!(f >= 1.0)) malformed(where + "factor must be a number >= 1 for rope_type '" + type + "'");
        return float(f);
    };
    if (type == "default") {
        s = RopeScaling{};
    } else if (type == "linear") {
        s.type = RopeType::linear;
        s.factor = factor();
    } else if (type == "llama3") {
        s.type = RopeType::llama3;
        s.factor = factor();
        s.low_freq_factor = float(get_number_or(r, "low_freq_factor", 1.0, where.c_str()));
        s.high_freq_factor = float(get_number_or(r, "high_freq_factor", 4.0, where.c_str()));
        s.original_max_position_embeddings = get_int_or(r, "original_max_position_embeddings", 8192);
        if (!(s.high_freq_factor > s.low_freq_factor) || s.low_freq_factor <= 0 ||
            s.original_max_position_embeddings <= 0)
            malformed(
                where +
                "llama3 rope needs 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0");
    } else {
        unsupported("rope type '" + type + "' is not supported; supported: " + kSupportedRope);
    }
}

void parse_rope(const json& j, ModelConfig& c) {
    c.rope_theta = float(get_number_or(j, "rope_theta", 10000.0));
    if (present(j, "rope_parameters")) {
        const json& p = j.at("rope_parameters");
        // transformers v5 may key rope_parameters by layer type ({"full_attention": {...}}).
        if (p.is_object() && p.size() == 1 && p.contains("full_attention"))
            parse_rope_block(p.at("full_attention"), "rope_parameters.full_attention", c);
        else
            parse_rope_block(p, "rope_parameters", c);
    } else if (present(j, "rope_scaling")) {
        parse_rope_block(j.at("rope_scaling"), "rope_scaling", c);
    }
    if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) malformed("rope_theta must be a positive number");
}

void parse_dtype_field(const json& j, ModelConfig& c) {
    const char* key = present(j, "dtype") ? "dtype" : present(j, "torch_dtype") ? "torch_dtype" : nullptr;
    if (!key) return;
    const json& v = j.at(key);
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (s == "bfloat16")
        c.dtype = DType::bf16;
    else if (s == "float16")
        c.dtype = DType::f16;
    else if (s == "float32")
        c.dtype = DType::f32;
    else
        unsupported(std::string("\"") + key + "\" is " + s + "; supported: bfloat16, float16, float32");
}

std::vector<int> parse_eos(const json& j) {
    std::vector<int> out;
    if (!present(j, "eos_token_id")) return out;
    const json& v = j.at("eos_token_id");
    if (v.is_number_integer()) {
        out.push_back(v.get<int>());
    } else if (v.is_array()) {
        for (const json& e : v) {
            if (!e.is_number_integer()) malformed("eos_token_id list must hold integers, got " + v.dump());
            out.push_back(e.get<int>());
        }
    } else {
        malformed("eos_token_id must be an integer or a list of integers, got " + v.dump());
    }
    return out;
}

void check_sliding_window(const json& j, const ModelConfig& c) {
    // Qwen2/Qwen3 gate the window with use_sliding_window; Mistral uses it whenever it is set and
    // shorter than the context. A window we ignore would silently change outputs, so refuse it.
    bool gated = c.arch == Architecture::qwen2 || c.arch == Architecture::qwen3;
    if (gated && !get_bool_or(j, "use_sliding_window", false)) return;
    if (!present(j, "sliding_window")) return;
    int w = get_int_or(j, "sliding_window", 0);
    if (w > 0 && w < c.max_position_embeddings)
        unsupported(
            fmt::format("sliding-window attention (sliding_window {} < max_position_embeddings {}) is not supported; "
                        "use a model version without it (e.g. Mistral v0.2+) or set sliding_window to null",
                        w, c.max_position_embeddings));
}

void parse_shapes(const json& j, ModelConfig& c) {
    c.vocab_size = get_positive_int(j, "vocab_size");
    c.hidden_size = get_positive_int(j, "hidden_size");
    c.intermediate_size = get_positive_int(j, "intermediate_size");
    c.n_layers = get_positive_int(j, "num_hidden_layers");
    c.n_heads = get_positive_int(j, "num_attention_heads");
    c.n_kv_heads = present(j, "num_key_value_heads") ? get_positive_int(j, "num_key_value_heads") : c.n_heads;
    if (c.n_heads % c.n_kv_heads != 0)
        malformed(
            fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}", c.n_heads, c.n_kv_heads));
    if (present(j, "head_dim")) {
        c.head_dim = get_positive_int(j, "head_dim");
    } else {
        if (c.hidden_size % c.n_heads != 0)
            malformed(fmt::format("hidden_size {} is not divisible by num_attention_heads {} and head_dim is not given",
                                  c.hidden_size, c.n_heads));
        c.head_dim = c.hidden_size / c.n_heads;
    }
    if (c.head_dim % 2 != 0) malformed(fmt::format("head_dim {} must be even for rotary embeddings", c.head_dim));
    c.max_position_embeddings =
        present(j, "max_position_embeddings") ? get_positive_int(j, "max_position_embeddings") : 2048;
}

// Prints a float config value the way Python would write the float32 it came from (1e-06, not
// 9.99999997e-07), so written configs read like Hugging Face's.
double clean(float v) { return std::stod(fmt::format("{}", v)); }

}  // namespace

std::string architecture_name(Architecture a) {
    switch (a) {
        case Architecture::llama:
            return "LlamaForCausalLM";
        case Architecture::qwen2:
            return "Qwen2ForCausalLM";
        case Architecture::qwen3:
            return "Qwen3ForCausalLM";
        case Architecture::mistral:
            return "MistralForCausalLM";
    }
    return "unknown";
}

ModelConfig parse_model_config(const json& j) {
    if (!j.is_object()) malformed("the top level must be a JSON object");
    ModelConfig c;
    c.arch = parse_architecture(j, &c.architecture_name);
    c.model_type =
        present(j, "model_type") && j.at("model_type").is_string() ? j.at("model_type").get<std::string>() : "";
    parse_shapes(j, c);
    if (present(j, "hidden_act")) {
        const json& act = j.at("hidden_act");
        if (!act.is_string() || act.get<std::string>() != "silu")
            unsupported("hidden_act " + act.dump() + " is not supported; supported: \"silu\" (SwiGLU MLP)");
    }
    double eps = get_number_or(j, "rms_norm_eps", 1e-6);
    if (!(eps > 0 && eps < 1)) malformed("rms_norm_eps must be in (0, 1)");
    c.rms_norm_eps = float(eps);
    parse_rope(j, c);
    c.tie_word_embeddings = get_bool_or(j, "tie_word_embeddings", false);
    bool attention_bias = get_bool_or(j, "attention_bias", false);
    switch (c.arch) {
        case Architecture::llama:
            c.qkv_bias = c.o_bias = attention_bias;
            c.mlp_bias = get_bool_or(j, "mlp_bias", false);
            break;
        case Architecture::qwen2:
            c.qkv_bias = true;
            break;  // hard-coded in Qwen2Attention
        case Architecture::qwen3:
            c.qkv_bias = c.o_bias = attention_bias;
            c.qk_norm = true;
            break;
        case Architecture::mistral:
            break;
    }
    check_sliding_window(j, c);
    c.bos_token_id = get_int_or(j, "bos_token_id", -1);
    c.eos_token_ids = parse_eos(j);
    parse_dtype_field(j, c);
    c.quant = parse_quant_config(j);
    return c;
}

ModelConfig load_model_config(const std::string& model_dir) {
    std::string path = (std::filesystem::path(model_dir) / "config.json").string();
    if (!std::filesystem::exists(path))
        throw_expected(ErrorCode::not_found,
                       "'" + model_dir + "' has no config.json (is it a Hugging Face model directory?)");
    json j;
    try {
        j = json::parse(read_text_file(path));
    } catch (const json::exception& e) {
        throw_expected(ErrorCode::corrupt_file, "'" + path + "' is not valid JSON: " + e.what());
    }
    try {
        return parse_model_config(j);
    } catch (const Error& e) {
        throw_expected(e.code(), std::string(e.what()) + " (in " + path + ")");
    }
}

json model_config_to_json(const ModelConfig& c) {
    json j;
    j["architectures"] = {architecture_name(c.arch)};
    const char* type = c.arch == Architecture::llama   ? "llama"
                       : c.arch == Architecture::qwen2 ? "qwen2"
                       : c.arch == Architecture::qwen3 ? "qwen3"
                                                       : "mistral";
    j["model_type"] = type;
    j["attention_dropout"] = 0.0;
    if (c.arch != Architecture::qwen2) j["attention_bias"] = c.qkv_bias;
    if (c.arch == Architecture::llama) {
        j["mlp_bias"] = c.mlp_bias;
        j["pretraining_tp"] = 1;
    }
    j["bos_token_id"] = c.bos_token_id >= 0 ? json(c.bos_token_id) : json(nullptr);
    if (c.eos_token_ids.size() == 1)
        j["eos_token_id"] = c.eos_token_ids[0];
    else if (c.eos_token_ids.empty())
        j["eos_token_id"] = nullptr;
    else
        j["eos_token_id"] = c.eos_token_ids;
    // head_dim is written whenever it differs from the default, and always for Qwen3 and Llama 3.2
    // style configs, as Hugging Face does.
    if (c.arch == Architecture::qwen3 || c.arch == Architecture::llama || c.head_dim * c.n_heads != c.hidden_size)
        j["head_dim"] = c.head_dim;
    j["hidden_act"] = "silu";
    j["hidden_size"] = c.hidden_size;
    j["initializer_range"] = 0.02;
    j["intermediate_size"] = c.intermediate_size;
    j["max_position_embeddings"] = c.max_position_embeddings;
    if (c.arch == Architecture::qwen2 || c.arch == Architecture::qwen3) {
        j["max_window_layers"] = c.n_layers;
        j["use_sliding_window"] = false;
    }
    if (c.arch != Architecture::llama) j["sliding_window"] = nullptr;
    j["num_attention_heads"] = c.n_heads;
    j["num_hidden_layers"] = c.n_layers;
    j["num_key_value_heads"] = c.n_kv_heads;
    j["rms_norm_eps"] = clean(c.rms_norm_eps);
    j["rope_theta"] = clean(c.rope_theta);
    const RopeScaling& s = c.rope_scaling;
    if (s.type == RopeType::default_) {
        j["rope_scaling"] = nullptr;
    } else if (s.type == RopeType::linear) {
        j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", clean(s.factor)}};
    } else {
        j["rope_scaling"] = {{"rope_type", "llama3"},
                             {"factor", clean(s.factor)},
                             {"low_freq_factor", clean(s.low_freq_factor)},
                             {"high_freq_factor", clean(s.high_freq_factor)},
                             {"original_max_position_embeddings", s.original_max_position_embeddings}};
    }
    j["tie_word_embeddings"] = c.tie_word_embeddings;
    j["torch_dtype"] = c.dtype == DType::bf16 ? "bfloat16" : c.dtype == DType::f16 ? "float16" : "float32";
    j["transformers_version"] = "4.51.3";
    j["use_cache"] = true;
    j["vocab_size"] = c.vocab_size;
    if (c.quant.quantized()) j["quantization_config"] = quant_config_to_json(c.quant);
    return j;
}

std::vector<int> load_eos_token_ids(const std::string& model_dir, const ModelConfig& c) {
    std::set<int> out(c.eos_token_ids.begin(), c.eos_token_ids.end());
    const auto path = std::filesystem::path(model_dir) / "generation_config.json";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return {out.begin(), out.end()};
    nlohmann::json g;
    try {
        g = nlohmann::json::parse(read_text_file(path.string()));
    } catch (const nlohmann::json::exception& e) {
        throw_expected(ErrorCode::corrupt_file, path.string() + " is not valid JSON: " + e.what());
    }
    if (g.is_object() && g.contains("eos_token_id")) {
        const auto& e = g["eos_token_id"];
        if (e.is_number_integer()) out.insert(e.get<int>());
        if (e.is_array())
            for (const auto& v : e)
                if (v.is_number_integer()) out.insert(v.get<int>());
    }
    return {out.begin(), out.end()};
}

}  // namespace loradesk::model
