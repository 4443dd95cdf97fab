// Backend selection; see runner_factory.h.
#include "runtime/factory/runner_factory.h"

#include "core/error.h"
#include "core/log.h"
#include "runtime/cpu/cpu_runner.h"
#ifdef LORADESK_RUNTIME_WITH_CUDA
#include "runtime/cuda/cuda_runner.h"
#endif

namespace loradesk::runtime {

std::unique_ptr<ModelRunner> create_runner(const std::string& device, const std::string& model_dir, int threads,
                                           bool fp8_w8a8) {
#ifdef LORADESK_RUNTIME_WITH_CUDA
    cuda::CudaRunnerOptions options;
    options.fp8_w8a8 = fp8_w8a8;
    if (device == "cuda") return std::make_unique<cuda::CudaRunner>(model_dir, 0, options);
    if (device == "auto") {
        if (cuda::cuda_device_available()) return std::make_unique<cuda::CudaRunner>(model_dir, 0, options);
        log::info("device auto: no usable CUDA GPU, using the CPU runner");
        return std::make_unique<cpu::CpuRunner>(model_dir, threads);
    }
#else
    (void)fp8_w8a8;
#endif
    if (device == "cpu" || device == "auto") {
        if (device == "auto") log::info("device auto: no CUDA runner compiled in, using the CPU runner");
        return std::make_unique<cpu::CpuRunner>(model_dir, threads);
    }
    if (device == "cuda")
        throw_expected(ErrorCode::unavailable,
                       "this build has no CUDA runner; rebuild with -DLORADESK_WITH_CUDA=ON or use --device cpu");
    throw_expected(ErrorCode::invalid_argument, "unknown device '" + device + "'; use auto, cpu or cuda");
}

}  // namespace loradesk::runtime
