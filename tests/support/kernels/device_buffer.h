// Minimal RAII device buffer for the CUDA tests and benchmarks: upload from / download to std::vector,
// every CUDA call checked (throws std::runtime_error naming the call).
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace loradesk::kernels::test {

inline void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A kernel launch's result, then the kernel's own (the device synchronized).
inline void sync_check(cudaError_t launch) {
    cuda_check(launch, "launch");
    cuda_check(cudaDeviceSynchronize(), "kernel");
}

template <class T>
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(const std::vector<T>& host) { upload(host); }
    explicit DeviceBuffer(std::size_t n) { resize(n); }
    ~DeviceBuffer() {
        if (m_ptr) cudaFree(m_ptr);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void resize(std::size_t n) {
        if (m_ptr) cudaFree(m_ptr), m_ptr = nullptr;
        m_n = n;
        if (n) cuda_check(cudaMalloc(reinterpret_cast<void**>(&m_ptr), n * sizeof(T)), "cudaMalloc");
    }
    void upload(const std::vector<T>& host) {
        if (host.size() != m_n) resize(host.size());
        if (m_n) cuda_check(cudaMemcpy(m_ptr, host.data(), m_n * sizeof(T), cudaMemcpyHostToDevice), "upload");
    }
    std::vector<T> download() const {
        std::vector<T> host(m_n);
        if (m_n) cuda_check(cudaMemcpy(host.data(), m_ptr, m_n * sizeof(T), cudaMemcpyDeviceToHost), "download");
        return host;
    }
    T* get() const { return m_ptr; }
    std::size_t size() const { return m_n; }

  private:
    T* m_ptr = nullptr;
    std::size_t m_n = 0;
};

}  // namespace loradesk::kernels::test
