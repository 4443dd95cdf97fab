// The HTTP server behind the Server view and headless mode. makeServerControl() returns nullptr in a
// build without engine/server (then the Server view says so and headless mode refuses to start).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/engine.h"
#include "ui/models/server_control.h"

namespace loradesk::app {

std::unique_ptr<ui::ServerControl> makeServerControl(std::shared_ptr<api::Engine> engine,
                                                     std::vector<std::string> adapterRoots);

}  // namespace loradesk::app
