// create_runner(): picks the ModelRunner backend for a device string. Its own library
// (loradesk_runtime_factory) above both backends, so that loradesk_runtime does not depend on its
// backends and the CPU runner does not link CUDA; the CUDA runner is there when LORADESK_WITH_CUDA is.
#pragma once

#include <memory>
#include <string>

#include "runtime/model_runner.h"

namespace loradesk::runtime {

// device: "cpu", "auto" (cuda when compiled in and a GPU is present, else cpu) or "cuda".
// threads: CPU worker threads (0 = all cores). fp8_w8a8: the CUDA runner's CudaRunnerOptions::fp8_w8a8.
// Throws Error(invalid_argument / unavailable).
std::unique_ptr<ModelRunner> create_runner(const std::string& device, const std::string& model_dir, int threads,
                                           bool fp8_w8a8 = true);

}  // namespace loradesk::runtime
