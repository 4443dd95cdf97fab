// Shared helpers for the LoRA tests: a tiny base-model config with q_dim != hidden (so in/out mixups
// show), adapter folders written from a synth spec, and raw edits of config and tensors.
#pragma once

#include <QTemporaryDir>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "lora/adapter_synth.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace loradesk::lora::testing {

inline model::ModelConfig tiny_base() {
    model::ModelConfig c;
    c.arch = model::Architecture::qwen3;
    c.architecture_name = "Qwen3ForCausalLM";
    c.model_type = "qwen3";
    c.vocab_size = 64;
    c.hidden_size = 16;
    c.intermediate_size = 40;
    c.n_layers = 3;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 6;  // q_dim 24, kv_dim 12
    c.max_position_embeddings = 128;
    return c;
}

inline std::string write_synth(const QTemporaryDir& tmp, const std::string& name, const SynthAdapterSpec& spec,
                               const model::ModelConfig& base = tiny_base()) {
    std::string dir = (std::filesystem::path(tmp.path().toStdString()) / name).string();
    synthesize_adapter(base, spec, dir);
    return dir;
}

inline nlohmann::json read_config(const std::string& dir) {
    return nlohmann::json::parse(read_text_file(dir + "/adapter_config.json"));
}

inline void write_config(const std::string& dir, const nlohmann::json& j) {
    write_text_file(dir + "/adapter_config.json", j.dump(2));
}

// Rewrites adapter_model.safetensors through fn(writer, tensors) — fn adds what the new file holds.
template <class Fn>
void rewrite_tensors(const std::string& dir, Fn&& fn) {
    std::string path = dir + "/adapter_model.safetensors";
    model::SafetensorsWriter w;
    {
        model::SafetensorsFile f(path);
        fn(w, f.tensors());
    }
    w.write(path);
}

inline std::vector<uint8_t> bytes_of(const model::TensorView& t) { return {t.data, t.data + t.nbytes}; }

}  // namespace loradesk::lora::testing
