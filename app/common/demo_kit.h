// Where the default run finds its model: the demo kit (resources/demo: a small trained Qwen3 model and
// four language/style adapters) when no --model is given. Looked up next to the executable (installed
// layout), then in the source tree of a development build.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loradesk::cli {

struct DemoKit {
    std::string model_dir;
    std::vector<std::pair<std::string, std::string>> adapters;  // (name, dir): de, es, it, bofh
};

// $LORADESK_DEMO_DIR, <exe>/../share/loradesk/demo, then the source tree's resources/demo; each holds
// fortune-6m/ (the model, served under that id) and adapters/<name>/.
std::optional<DemoKit> find_demo_kit();

}  // namespace loradesk::cli
