// --adapter for the commands that drive a runner directly (logits, single-prompt generate): loads a
// PEFT adapter folder with the engine's own loader and puts it in LoRA slot 1.
#pragma once

#include <string>
#include <utility>

#include "runtime/model_runner.h"

namespace loradesk::cli {

// "NAME=DIR" or "DIR" -> (name, dir); the name defaults to the folder name. DIR may be a Hub id
// (org/name[@revision]) in the Hugging Face cache: dir is then its snapshot and the name defaults to `name`.
std::pair<std::string, std::string> split_adapter_spec(const std::string& spec);

// Validates the adapter against the runner's base model and loads it into slot 1; returns the slot.
int attach_adapter(runtime::ModelRunner& runner, const std::string& dir, int max_rank);

}  // namespace loradesk::cli
