// What one launch of the desktop app was asked to do: the engine/server options from the command line
// (the same as `loradeskd serve`), which of them the user gave explicitly, and the model resolved from
// --model, then the remembered settings, then the demo kit.
#pragma once

#include <QSettings>
#include <string>
#include <vector>

#include "engine_cli.h"
#include "ui/models/app_settings.h"

namespace loradesk::app {

struct LaunchOptions {
    cli::ServeOptions serve;
    bool headless = false;
    bool explicitModel = false;   // --model or --demo
    bool explicitLimits = false;  // any of --device/--max-loras*/--max-lora-rank/--kv-memory/--fp8-weight-only
    bool explicitServer = false;  // any of --host/--port/--api-key/--api-key-file
    bool forceDemo = false;
    std::string modelReference;  // --model as typed (a folder or a Hub id): what the settings remember
};

std::vector<cli::OptionSpec> launchOptionSpecs();
// Throws Error(invalid_argument) naming the option.
LaunchOptions parseLaunchOptions(const cli::Args& args);
// Fills the model from the settings (unless given; a remembered Hub id resolves from the Hugging Face cache)
// and the demo kit (when still none); returns a message for the user when there is no model at all or a
// remembered Hub id is not in the cache.
std::string resolveModel(LaunchOptions& launch, const ui::AppSettings& settings);
// Whether the first start should ask which model to serve (ui/first_run_dialog.h): no --model or --demo, and
// settings that were never written (any start that loaded a model writes them, so it is asked once).
// LORADESK_NO_FIRST_RUN=1 skips it for scripted starts.
bool needsFirstRunChoice(const LaunchOptions& launch, const QSettings& store);

}  // namespace loradesk::app
