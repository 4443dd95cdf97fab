// AdapterSummary: what the catalog and the UI need to know about an adapter folder without loading
// its tensors into the runtime: identity (content digest), PEFT config summary, size, and the
// signature of the files the digest was taken from (so a cached digest can be trusted later).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loradesk::lora {

struct AdapterSummary {
    std::string digest;      // sha256 hex over the canonical config and tensors
    std::string name;        // folder name (the registry sets the served name)
    std::string path;        // absolute folder path
    std::string signature;   // folder_signature(path) when the digest was taken
    std::string base_model;  // base_model_name_or_path (informational)
    int rank = 0;            // max rank over modules
    float alpha = 0;
    bool rslora = false;
    std::vector<std::string> targets;  // module short names present in the tensors: q_proj, ...
    std::vector<int> layers;           // layer indices present
    std::size_t size_bytes = 0;        // adapter_model.safetensors size
    std::string dtype;                 // tensor dtype as stored (F32, BF16, ...)
};

// Identifies the state of the files a digest covers (adapter_config.json and
// adapter_model.safetensors): per file its inode, size, mtime and ctime in nanoseconds ("-" when
// missing). Any rewrite, replacement (rename over it, a copy of the folder) or touch changes it;
// ctime also catches a rewrite whose mtime was set back. Two stat calls, no reads.
std::string folder_signature(const std::string& dir);

// Reads adapter_config.json and adapter_model.safetensors in `dir`, validates them as PEFT LoRA
// (fails closed with Error on anything we cannot apply exactly) and hashes them. The signature is
// taken before and after reading; a folder that changes meanwhile is read again (a few times, then
// ExpectedError(unavailable)), so summary.signature always describes the hashed content.
AdapterSummary summarize_adapter(const std::string& dir);

}  // namespace loradesk::lora
