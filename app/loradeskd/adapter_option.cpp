#include "adapter_option.h"

#include <filesystem>

#include "hub/hf_cache.h"
#include "lora/adapter_loader.h"

namespace loradesk::cli {

std::pair<std::string, std::string> split_adapter_spec(const std::string& spec) {
    const auto eq = spec.find('=');
    const std::string ref = eq == std::string::npos ? spec : spec.substr(eq + 1);
    const std::string dir = hub::resolve_reference(ref, hub::RepoContent::adapter);
    if (eq != std::string::npos) return {spec.substr(0, eq), dir};
    if (dir != ref) {
        const std::string repo = hub::parse_hub_id(ref)->repo;
        return {repo.substr(repo.find('/') + 1), dir};
    }
    return {std::filesystem::path(spec).filename().string(), spec};
}

int attach_adapter(runtime::ModelRunner& runner, const std::string& dir, int max_rank) {
    runtime::LoraWeights w = lora::load_adapter(dir, runner.config(), max_rank);
    runner.configure_lora_slots(1, std::max(1, w.max_rank()));
    runner.load_lora_slot(1, w);
    return 1;
}

}  // namespace loradesk::cli
