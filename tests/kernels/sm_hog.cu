// SmHog (sm_hog.h): a kernel that holds whole SMs until the host says stop, and a probe that reports where
// small blocks land while it does.
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "sm_hog.h"

namespace loradesk::kernels::test {
namespace {

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("SmHog: ") + what + ": " + cudaGetErrorString(e));
}

__device__ uint64_t global_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ int sm_id() {
    int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// One thread polls the stop flag; the others wait at the barrier, which keeps the whole block (its threads,
// registers and shared memory) resident on its SM.
__global__ void __launch_bounds__(1024, 1) hog_kernel(volatile int32_t* flags, uint64_t max_ns) {
    extern __shared__ int32_t smem[];  // the SM's whole opt-in shared memory: nothing fits beside the block
    if (threadIdx.x == 0) {
        flags[1 + blockIdx.x] = sm_id() + 1;
        __threadfence_system();
        const uint64_t t0 = global_ns();
        bool gave_up = false;
        while (flags[0] == 0 && !gave_up) {
            __nanosleep(10000);
            gave_up = global_ns() - t0 > max_ns;
        }
        if (gave_up) flags[1 + blockIdx.x] = -1;
        smem[0] = gave_up;
    }
    __syncthreads();
}

__global__ void probe_kernel(int32_t* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = sm_id() + 1;
}

}  // namespace

SmHog::SmHog() {
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&m_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "shared memory size");
    check(cudaFuncSetAttribute(hog_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, m_smem), "smem attribute");
    void* h = nullptr;
    check(cudaHostAlloc(&h, (1 + kMaxBlocks) * sizeof(int32_t), cudaHostAllocMapped), "cudaHostAlloc");
    m_flags = static_cast<volatile int32_t*>(h);
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m_flags_dev), h, 0), "cudaHostGetDevicePointer");
    check(cudaHostAlloc(&h, kMaxBlocks * sizeof(int32_t), cudaHostAllocMapped), "cudaHostAlloc");
    m_probe = static_cast<int32_t*>(h);
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m_probe_dev), h, 0), "cudaHostGetDevicePointer");
    // Under lazy module loading (the default) a kernel's first launch waits for the GPU to drain: a first probe
    // behind a running hog would never start. Load both kernels now.
    probe_kernel<<<1, 32>>>(m_probe_dev);
    check(cudaGetLastError(), "probe launch");
    check(cudaDeviceSynchronize(), "probe");
}

SmHog::~SmHog() {
    stop();
    // Freeing pinned memory waits for the device; a hog that is still draining takes microseconds.
    cudaFreeHost(const_cast<int32_t*>(m_flags));
    cudaFreeHost(m_probe);
}

int SmHog::blocks_per_sm() const {
    int n = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, hog_kernel, 1024, std::size_t(m_smem)), "occupancy");
    return n;
}

bool SmHog::start(int n_sms, cudaStream_t stream, double start_timeout_s, double max_seconds) {
    if (n_sms < 1 || n_sms > kMaxBlocks) throw std::runtime_error("SmHog: n_sms out of range");
    for (int i = 0; i <= kMaxBlocks; ++i) m_flags[i] = 0;
    m_blocks = n_sms, m_stream = stream;
    hog_kernel<<<n_sms, 1024, std::size_t(m_smem), stream>>>(m_flags_dev, uint64_t(max_seconds * 1e9));
    check(cudaGetLastError(), "hog launch");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(start_timeout_s);
    for (;;) {
        int started = 0;
        for (int b = 0; b < n_sms; ++b) started += m_flags[1 + b] > 0;
        if (started == n_sms) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

void SmHog::stop() { m_flags[0] = 1; }

bool SmHog::holding() const {
    if (m_flags[0] != 0 || m_blocks == 0) return false;
    for (int b = 0; b < m_blocks; ++b)
        if (m_flags[1 + b] <= 0) return false;
    return true;
}

std::set<int> SmHog::sms() const {
    std::set<int> s;
    for (int b = 0; b < m_blocks; ++b)
        if (m_flags[1 + b] > 0) s.insert(m_flags[1 + b] - 1);
    return s;
}

std::set<int> SmHog::probe(int n_blocks, cudaStream_t stream) const {
    if (n_blocks < 1 || n_blocks > kMaxBlocks) throw std::runtime_error("SmHog: probe size out of range");
    for (int b = 0; b < n_blocks; ++b) m_probe[b] = 0;
    probe_kernel<<<n_blocks, 128, 0, stream>>>(m_probe_dev);
    check(cudaGetLastError(), "probe launch");
    check(wait_with_deadline(stream, 10.0), "probe (did it find no free SM?)");
    std::set<int> s;
    for (int b = 0; b < n_blocks; ++b) s.insert(m_probe[b] - 1);
    return s;
}

cudaError_t wait_with_deadline(cudaStream_t stream, double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        const cudaError_t e = cudaStreamQuery(stream);
        if (e != cudaErrorNotReady) return e;
        if (std::chrono::steady_clock::now() > deadline) return cudaErrorNotReady;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

}  // namespace loradesk::kernels::test
