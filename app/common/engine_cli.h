// Engine options shared by `loradeskd serve` and the desktop app: one spec list for parsing and
// --help, one conversion into api::EngineOptions (with range checks that name the option).
#pragma once

#include <string>
#include <vector>

#include "api/engine.h"
#include "cli.h"

namespace loradesk::cli {

struct ServeOptions {
    api::EngineOptions engine;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;                    // --api-key, --api-key-file or $LORADESK_API_KEY
    int metrics_adapter_window_s = 600;     // /metrics per-adapter series: adapters active this recently
    bool demo = false;                      // --demo, or no --model given
    std::string tool_call_parser = "auto";  // --tool-call-parser: one of server::kToolCallParserNames
    int shutdown_timeout_s = 10;            // drain: how long running requests may still finish after a stop signal
    std::vector<std::string> extra_adapter_roots;  // folders load_lora_adapter may read besides --adapters
    std::string hub_cache_dir;                     // Hugging Face cache Hub ids in load_lora_adapter resolve from
};

std::vector<OptionSpec> engine_option_specs();
// The folder `--<option>` names: a folder as given, or the snapshot of a Hub id (org/name[@revision]) in the
// Hugging Face cache. Throws Error(invalid_argument) when the option is missing, Error(not_found) when the id is
// not cached (saying `loradeskd pull ID` fetches it).
std::string model_folder(const Args& args, const std::string& option = "model");
// Throws Error(invalid_argument) naming the option on bad values, Error(not_found) for an unreadable key file
// or a Hub id (--model, --adapter NAME=ORG/NAME) missing from the Hugging Face cache (saying to pull it).
ServeOptions serve_options_from_args(const Args& args);
// Turns e.model_dir, when it is a Hub id and no existing folder, into its snapshot in the Hugging Face cache and
// serves it under the id (served_model_id), as vLLM does. Throws Error(not_found) saying to pull a missing id.
void resolve_model_reference(api::EngineOptions& e);
// $XDG_DATA_HOME/loradesk, else $HOME/.local/share/loradesk: the one default data directory of loradeskd serve,
// loradeskd catalog and the desktop app. Throws Error(invalid_argument) naming --data-dir when neither is set.
std::string default_data_dir();

}  // namespace loradesk::cli
