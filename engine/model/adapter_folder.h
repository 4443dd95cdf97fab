// What is known about a PEFT adapter folder without loading it: AdapterSummary (identity, config
// summary, size) and folder_signature(), the stat-based identity of the files a digest covers.
// Plain data and two stat calls; reading and validating the files is lora::summarize_adapter's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loradesk::model {

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

}  // namespace loradesk::model
