// Helpers shared by the catalog tests: adapter summaries built directly (no files) and temp dirs.
#pragma once

#include <string>

#include "core/sha256.h"
#include "lora/adapter_summary.h"

namespace loradesk::catalog::test {

// A summary whose digest is derived from `content`, so that equal content gives equal identity.
inline lora::AdapterSummary make_summary(const std::string& name, const std::string& content, int rank = 8,
                                         const std::string& path_root = "/adapters") {
    lora::AdapterSummary s;
    s.digest = sha256_hex(content);
    s.name = name;
    s.path = path_root + "/" + name;
    s.base_model = "Qwen/Qwen3-0.6B";
    s.rank = rank;
    s.alpha = float(2 * rank);
    s.rslora = false;
    s.targets = {"q_proj", "v_proj"};
    s.layers = {0, 1, 2};
    s.size_bytes = std::size_t(rank) * 4096;
    s.dtype = "BF16";
    return s;
}

}  // namespace loradesk::catalog::test
