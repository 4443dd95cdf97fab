// summarize_adapter(): identity and a config summary for the catalog and the UI, from a full
// validation pass that does not need the base model (shapes are checked again when it is loaded).
#include "lora/adapter_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "lora/adapter_loader.h"

namespace loradesk::lora {

namespace {

AdapterSummary summarize_once(const std::string& dir) {
    AdapterPlan plan = plan_adapter(dir, nullptr, 0);
    AdapterSummary s;
    s.digest = adapter_digest(plan);
    s.name = plan.name;
    s.path = std::filesystem::absolute(dir).lexically_normal().string();
    s.base_model = plan.config.base_model;
    s.alpha = float(plan.config.lora_alpha);
    s.rslora = plan.config.use_rslora;
    std::set<int> modules, layers;
    std::set<std::string> dtypes;
    for (auto& m : plan.modules) {
        s.rank = std::max(s.rank, m.rank);
        modules.insert(int(m.module));
        layers.insert(m.layer);
        dtypes.insert(std::string(dtype_name(m.a->dtype)));
        dtypes.insert(std::string(dtype_name(m.b->dtype)));
    }
    for (int m : modules) s.targets.emplace_back(runtime::lora_module_name(runtime::LoraModule(m)));
    s.layers.assign(layers.begin(), layers.end());
    for (auto& d : dtypes) s.dtype += (s.dtype.empty() ? "" : "+") + d;
    s.size_bytes = std::size_t(std::filesystem::file_size(plan.file->path()));
    return s;
}

}  // namespace

AdapterSummary summarize_adapter(const std::string& dir) {
    constexpr int kAttempts = 3;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        std::string before = folder_signature(dir);
        AdapterSummary s = summarize_once(dir);
        s.signature = folder_signature(dir);
        if (s.signature == before) return s;
    }
    throw_expected(ErrorCode::unavailable, "adapter folder '" + dir + "' kept changing while it was read (" +
                                               std::to_string(kAttempts) +
                                               " attempts); try again once it is completely written");
}

}  // namespace loradesk::lora
