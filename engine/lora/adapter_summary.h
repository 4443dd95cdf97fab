// AdapterSummary: what the catalog and the UI need to know about an adapter folder without loading
// its tensors into the runtime: identity (content digest), PEFT config summary, size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loradesk::lora {

struct AdapterSummary {
    std::string digest;      // sha256 hex over the canonical config and tensors
    std::string name;        // folder name
    std::string path;        // absolute folder path
    std::string base_model;  // base_model_name_or_path (informational)
    int rank = 0;            // max rank over modules
    float alpha = 0;
    bool rslora = false;
    std::vector<std::string> targets;  // module short names present in the tensors: q_proj, ...
    std::vector<int> layers;           // layer indices present
    std::size_t size_bytes = 0;        // adapter_model.safetensors size
    std::string dtype;                 // tensor dtype as stored (F32, BF16, ...)
};

// Reads adapter_config.json and adapter_model.safetensors in `dir`, validates them as PEFT LoRA
// (fails closed with Error on anything we cannot apply exactly) and hashes them.
AdapterSummary summarize_adapter(const std::string& dir);

}  // namespace loradesk::lora
