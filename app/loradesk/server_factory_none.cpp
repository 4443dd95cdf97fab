// Builds without engine/server: no HTTP server to control.
#include "server_factory.h"

namespace loradesk::app {

std::unique_ptr<ui::ServerControl> makeServerControl(std::shared_ptr<api::Engine>, std::vector<std::string>) {
    return nullptr;
}

}  // namespace loradesk::app
