// create_runner(): picks the ModelRunner backend for a device string. Lives in engine/runtime/cpu
// (not engine/runtime) so that loradesk_runtime does not depend on its own backends; the CUDA
// backend extends it behind LORADESK_WITH_CUDA.
#pragma once

#include <memory>
#include <string>

#include "runtime/model_runner.h"

namespace loradesk::runtime {

// device: "cpu", "auto" (cuda when compiled in and a GPU is present, else cpu) or "cuda".
// threads: CPU worker threads (0 = all cores). Throws Error(invalid_argument / unavailable).
std::unique_ptr<ModelRunner> create_runner(const std::string& device, const std::string& model_dir, int threads);

}  // namespace loradesk::runtime
