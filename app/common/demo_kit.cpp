#include "demo_kit.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace loradesk::cli {
namespace fs = std::filesystem;

namespace {

// The demo model's folder name is its served model id.
constexpr const char* kDemoModel = "fortune-6m";

std::optional<DemoKit> kit_at(const fs::path& root) {
    std::error_code ec;
    if (!fs::exists(root / kDemoModel / "config.json", ec)) return std::nullopt;
    DemoKit kit;
    kit.model_dir = (root / kDemoModel).string();
    for (const char* name : {"de", "es", "it", "bofh"}) {
        fs::path dir = root / "adapters" / name;
        if (fs::exists(dir / "adapter_config.json", ec)) kit.adapters.emplace_back(name, dir.string());
    }
    return kit;
}

fs::path executable_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

}  // namespace

std::optional<DemoKit> find_demo_kit() {
    if (const char* env = std::getenv("LORADESK_DEMO_DIR"); env && *env) return kit_at(env);
    if (auto k = kit_at(executable_dir() / ".." / "share" / "loradesk" / "demo")) return k;
#ifdef LORADESK_SOURCE_DIR
    if (auto k = kit_at(fs::path(LORADESK_SOURCE_DIR) / "resources" / "demo")) return k;
#endif
    return std::nullopt;
}

}  // namespace loradesk::cli
