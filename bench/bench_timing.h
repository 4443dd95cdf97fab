// Timing helpers of the GPU kernel benchmarks: median of CUDA-event-timed launches after warm-up, and the
// device copy bandwidth (read + write bytes per second) that their memory floors are computed from.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "device_buffer.h"

namespace loradesk::kernels::test {

// Median over 50 timed calls of launch() (5 untimed first); reps launches per timed call, time per launch.
template <class F>
float median_ms(F&& launch, int reps = 1) {
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 5; ++i) launch();
    std::vector<float> t;
    for (int i = 0; i < 50; ++i) {
        cudaEventRecord(a);
        for (int r = 0; r < reps; ++r) launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms / float(reps));
    }
    cuda_check(cudaGetLastError(), "bench launch");
    cudaEventDestroy(a), cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

inline double copy_bandwidth() {  // bytes read + written per second, device to device
    const std::size_t n = std::size_t(1) << 30;
    DeviceBuffer<uint8_t> a(n), b(n);
    cudaMemset(a.get(), 1, n);
    float ms = median_ms([&] { cudaMemcpyAsync(b.get(), a.get(), n, cudaMemcpyDeviceToDevice); });
    return 2.0 * n / (ms * 1e-3);
}

}  // namespace loradesk::kernels::test
