// The HTTP server behind the desktop app's Server view: a ServerControl over engine/server that can be
// started and stopped with a new host, port and key while the engine keeps running.
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
