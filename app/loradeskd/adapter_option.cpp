#include "adapter_option.h"

#include <filesystem>

#include "lora/adapter_loader.h"

namespace loradesk::cli {

std::pair<std::string, std::string> split_adapter_spec(const std::string& spec) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) return {std::filesystem::path(spec).filename().string(), spec};
    return {spec.substr(0, eq), spec.substr(eq + 1)};
}

int attach_adapter(runtime::ModelRunner& runner, const std::string& dir, int max_rank) {
    runtime::LoraWeights w = lora::load_adapter(dir, runner.config(), max_rank);
    runner.configure_lora_slots(1, std::max(1, w.max_rank()));
    runner.load_lora_slot(1, w);
    return 1;
}

}  // namespace loradesk::cli
