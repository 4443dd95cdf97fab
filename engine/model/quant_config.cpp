// Parses and writes config.json's quantization_config for the formats in quant_config.h. Field names and
// defaults follow the tools that write them: transformers' FineGrainedFP8Config (Qwen3/DeepSeek FP8),
// llm-compressor's compressed-tensors, AutoAWQ and AutoGPTQ/GPTQModel.
#include "model/quant_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"

namespace loradesk::model {
namespace {

using json = nlohmann::json;

constexpr const char* kSupported =
    "fp8 with weight_block_size (e4m3, e.g. Qwen3-FP8), compressed-tensors float-quantized FP8 (per-tensor or "
    "per-channel weights), awq (4-bit, version gemm, zero_point) and gptq (4-bit, checkpoint_format gptq or "
    "gptq_v2, with or without desc_act)";

[[noreturn]] void unsupported(const std::string& what) {
    throw_expected(ErrorCode::unsupported, "config.json: quantization_config: " + what + "; supported: " + kSupported);
}
[[noreturn]] void malformed(const std::string& what) {
    throw_expected(ErrorCode::corrupt_file, "config.json: quantization_config: " + what);
}

bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

int int_field(const json& j, const char* key, int fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_number_integer()) malformed(std::string("\"") + key + "\" must be an integer");
    return j.at(key).get<int>();
}

bool bool_field(const json& j, const char* key, bool fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_boolean()) malformed(std::string("\"") + key + "\" must be true or false");
    return j.at(key).get<bool>();
}

std::string string_field(const json& j, const char* key, const std::string& fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_string()) malformed(std::string("\"") + key + "\" must be a string");
    return j.at(key).get<std::string>();
}

std::vector<std::string> string_list(const json& j, const char* key) {
    std::vector<std::string> out;
    if (!present(j, key)) return out;
    if (!j.at(key).is_array()) malformed(std::string("\"") + key + "\" must be a list of module names");
    for (const json& e : j.at(key)) {
        if (!e.is_string()) malformed(std::string("\"") + key + "\" must hold strings");
        out.push_back(e.get<std::string>());
    }
    return out;
}

void parse_fp8(const json& q, QuantConfig& c) {
    if (!present(q, "weight_block_size"))
        unsupported("quant_method \"fp8\" without weight_block_size (per-tensor AutoFP8 layout) is not supported");
    const json& b = q.at("weight_block_size");
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        b[0].get<int>() <= 0 || b[1].get<int>() <= 0)
        malformed("weight_block_size must be two positive integers, got " + b.dump());
    const std::string fmt_name = string_field(q, "fmt", "e4m3");
    if (fmt_name != "e4m3") unsupported("fp8 fmt \"" + fmt_name + "\" is not supported (only e4m3)");
    c.format = QuantFormat::fp8_block;
    c.bits = 8;
    c.block_out = b[0].get<int>();
    c.block_in = b[1].get<int>();
    c.dynamic_activations = string_field(q, "activation_scheme", "dynamic") == "dynamic";
    c.not_converted = string_list(q, "modules_to_not_convert");
}

void parse_compressed_tensors(const json& q, QuantConfig& c) {
    const std::string format = string_field(q, "format", "");
    if (format != "float-quantized") unsupported("compressed-tensors format \"" + format + "\" is not supported");
    if (!present(q, "config_groups") || !q.at("config_groups").is_object() || q.at("config_groups").empty())
        malformed("compressed-tensors needs config_groups");
    std::string strategy;
    for (const auto& [name, group] : q.at("config_groups").items()) {
        if (!group.is_object() || !present(group, "weights") || !group.at("weights").is_object())
            malformed("config_groups." + name + " has no weights scheme");
        const json& w = group.at("weights");
        const std::string type = string_field(w, "type", "");
        const int bits = int_field(w, "num_bits", 0);
        if (type != "float" || bits != 8)
            unsupported(
                fmt::format("config_groups.{} weights type \"{}\" num_bits {} (only float 8)", name, type, bits));
        const std::string s = string_field(w, "strategy", "");
        if (s != "tensor" && s != "channel")
            unsupported("config_groups." + name + " weight strategy \"" + s + "\" (only tensor and channel)");
        if (!strategy.empty() && s != strategy) unsupported("config groups with different weight strategies");
        strategy = s;
        if (present(group, "input_activations") && group.at("input_activations").is_object())
            c.dynamic_activations = bool_field(group.at("input_activations"), "dynamic", true);
    }
    c.format = strategy == "tensor" ? QuantFormat::fp8_tensor : QuantFormat::fp8_channel;
    c.bits = 8;
    c.not_converted = string_list(q, "ignore");
}

void parse_awq(const json& q, QuantConfig& c) {
    const int bits = int_field(q, "bits", int_field(q, "w_bit", 4));
    const std::string version = string_field(q, "version", "gemm");
    if (bits != 4) unsupported(fmt::format("awq with {} bits", bits));
    if (version != "gemm" && version != "GEMM") unsupported("awq version \"" + version + "\" (only gemm)");
    if (!bool_field(q, "zero_point", true)) unsupported("awq without zero_point");
    c.format = QuantFormat::awq;
    c.bits = 4;
    c.group_size = int_field(q, "group_size", int_field(q, "q_group_size", 128));
    if (c.group_size <= 0) malformed(fmt::format("awq group_size must be positive, got {}", c.group_size));
    c.not_converted = string_list(q, "modules_to_not_convert");
}

void parse_gptq(const json& q, QuantConfig& c) {
    const int bits = int_field(q, "bits", 4);
    if (bits != 4) unsupported(fmt::format("gptq with {} bits", bits));
    const std::string checkpoint = string_field(q, "checkpoint_format", "gptq");
    if (checkpoint != "gptq" && checkpoint != "gptq_v2")
        unsupported("gptq checkpoint_format \"" + checkpoint + "\" (only gptq and gptq_v2)");
    if (bool_field(q, "lm_head", false)) unsupported("gptq with a quantized lm_head");
    if (present(q, "dynamic") && !q.at("dynamic").empty()) unsupported("gptq per-module \"dynamic\" overrides");
    c.format = QuantFormat::gptq;
    c.bits = 4;
    c.gptq_version = checkpoint == "gptq_v2" ? 2 : 1;
    c.group_size = int_field(q, "group_size", 128);
    if (c.group_size == 0 || c.group_size < -1)
        malformed(fmt::format("gptq group_size must be positive or -1, got {}", c.group_size));
    c.desc_act = bool_field(q, "desc_act", false);
    c.sym = bool_field(q, "sym", true);
}

}  // namespace

bool QuantConfig::quantizes(const std::string& module) const {
    if (format == QuantFormat::none) return false;
    const bool compressed = format == QuantFormat::fp8_tensor || format == QuantFormat::fp8_channel;
    for (const std::string& n : not_converted) {
        if (compressed && n.starts_with("re:")) {
            if (std::regex_search(module, std::regex(n.substr(3)), std::regex_constants::match_continuous))
                return false;
        } else if (compressed ? module == n : module.find(n) != std::string::npos) {
            return false;
        }
    }
    return true;
}

std::string quant_format_name(QuantFormat f) {
    switch (f) {
        case QuantFormat::none:
            return "none";
        case QuantFormat::fp8_block:
            return "fp8";
        case QuantFormat::fp8_tensor:
            return "fp8-tensor";
        case QuantFormat::fp8_channel:
            return "fp8-channel";
        case QuantFormat::awq:
            return "awq";
        case QuantFormat::gptq:
            return "gptq";
    }
    return "none";
}

std::string quant_description(const QuantConfig& q) {
    switch (q.format) {
        case QuantFormat::none:
            return "none";
        case QuantFormat::fp8_block:
            return fmt::format("fp8 e4m3, {}x{} blocks", q.block_out, q.block_in);
        case QuantFormat::fp8_tensor:
            return "fp8 e4m3, per-tensor scale (compressed-tensors)";
        case QuantFormat::fp8_channel:
            return "fp8 e4m3, per-channel scales (compressed-tensors)";
        case QuantFormat::awq:
            return fmt::format("awq int4, group {}", q.group_size);
        case QuantFormat::gptq:
            return fmt::format("gptq int4, group {}{}{}", q.group_size, q.desc_act ? ", act-order" : "",
                               q.gptq_version == 2 ? ", v2" : "");
    }
    return "none";
}

QuantConfig parse_quant_config(const json& config_json) {
    QuantConfig c;
    if (!config_json.is_object() || !present(config_json, "quantization_config")) return c;
    const json& q = config_json.at("quantization_config");
    if (!q.is_object()) malformed("must be an object, got " + q.dump());
    if (!present(q, "quant_method") || !q.at("quant_method").is_string()) malformed("missing \"quant_method\"");
    const std::string method = q.at("quant_method").get<std::string>();
    if (method == "fp8")
        parse_fp8(q, c);
    else if (method == "compressed-tensors")
        parse_compressed_tensors(q, c);
    else if (method == "awq")
        parse_awq(q, c);
    else if (method == "gptq")
        parse_gptq(q, c);
    else
        unsupported("quant_method \"" + method + "\" is not supported");
    return c;
}

json quant_config_to_json(const QuantConfig& q) {
    const json not_converted = q.not_converted.empty() ? json(nullptr) : json(q.not_converted);
    switch (q.format) {
        case QuantFormat::none:
            return nullptr;
        case QuantFormat::fp8_block:
            return {{"activation_scheme", q.dynamic_activations ? "dynamic" : "static"},
                    {"fmt", "e4m3"},
                    {"quant_method", "fp8"},
                    {"weight_block_size", {q.block_out, q.block_in}}};
        case QuantFormat::fp8_tensor:
        case QuantFormat::fp8_channel: {
            const bool tensor = q.format == QuantFormat::fp8_tensor;
            json weights = {{"actorder", nullptr},
                            {"block_structure", nullptr},
                            {"dynamic", false},
                            {"group_size", nullptr},
                            {"num_bits", 8},
                            {"observer", "minmax"},
                            {"observer_kwargs", json::object()},
                            {"strategy", tensor ? "tensor" : "channel"},
                            {"symmetric", true},
                            {"type", "float"}};
            json inputs = {{"actorder", nullptr},
                           {"block_structure", nullptr},
                           {"dynamic", true},
                           {"group_size", nullptr},
                           {"num_bits", 8},
                           {"observer", nullptr},
                           {"observer_kwargs", json::object()},
                           {"strategy", "token"},
                           {"symmetric", true},
                           {"type", "float"}};
            json group = {{"input_activations", inputs},
                          {"output_activations", nullptr},
                          {"targets", {"Linear"}},
                          {"weights", weights}};
            return {{"config_groups", {{"group_0", group}}},
                    {"format", "float-quantized"},
                    {"global_compression_ratio", nullptr},
                    {"ignore", q.not_converted.empty() ? json::array({"lm_head"}) : json(q.not_converted)},
                    {"kv_cache_scheme", nullptr},
                    {"quant_method", "compressed-tensors"},
                    {"quantization_status", "compressed"}};
        }
        case QuantFormat::awq:
            return {{"bits", 4},
                    {"group_size", q.group_size},
                    {"modules_to_not_convert", not_converted},
                    {"quant_method", "awq"},
                    {"version", "gemm"},
                    {"zero_point", true}};
        case QuantFormat::gptq:
            return {{"bits", 4},
                    {"checkpoint_format", q.gptq_version == 2 ? "gptq_v2" : "gptq"},
                    {"damp_percent", 0.01},
                    {"desc_act", q.desc_act},
                    {"group_size", q.group_size},
                    {"model_file_base_name", nullptr},
                    {"model_name_or_path", nullptr},
                    {"quant_method", "gptq"},
                    {"static_groups", false},
                    {"sym", q.sym},
                    {"true_sequential", true}};
    }
    return nullptr;
}

}  // namespace loradesk::model
