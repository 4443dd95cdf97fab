// read_bandwidth_bench: what DRAM gives a kernel that only reads, beside the device copy bandwidth (read + write) that
// the benchmarks' floors and loradeskd's roofline divide by. Streams 2 GB (40x the L2) with 16-byte loads that skip
// L1, every thread keeping `depth` loads in flight, XOR-folded into one word per block so nothing is optimized away.
// Rows: the whole GPU at several block shapes and depths, then one block per SM on fewer SMs, which shows whether an
// SM alone can pull its share of the bandwidth (the decode kernels stream weights and KV at one to six blocks per SM).
//
//   read_bandwidth_bench
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "bench_timing.h"
#include "device_buffer.h"

using namespace loradesk::kernels::test;

namespace {

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Block b reads chunks b, b + grid, ...; a chunk is blockDim.x * DEPTH uint4, each thread's DEPTH loads issued
// together.
template <int DEPTH>
__global__ void read_kernel(const uint4* __restrict__ src, std::size_t n_chunks, unsigned* sink) {
    unsigned acc = 0;
    const std::size_t chunk = std::size_t(blockDim.x) * DEPTH;
    for (std::size_t c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        const uint4* p = src + c * chunk + threadIdx.x;
        uint4 v[DEPTH];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) v[d] = load_stream(p + std::size_t(d) * blockDim.x);
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) acc ^= v[d].x ^ v[d].y ^ v[d].z ^ v[d].w;
    }
    if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;  // almost never true; keeps the loads
}

template <int DEPTH>
double read_gbps(const DeviceBuffer<uint8_t>& buf, int grid, int threads, unsigned* sink) {
    const std::size_t n_chunks = buf.size() / (std::size_t(threads) * DEPTH * 16);
    const float ms = median_ms(
        [&] { read_kernel<DEPTH><<<grid, threads>>>(reinterpret_cast<const uint4*>(buf.get()), n_chunks, sink); });
    return double(n_chunks) * threads * DEPTH * 16 / (ms * 1e-3) / 1e9;
}

}  // namespace

int main() {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    const int sms = prop.multiProcessorCount;
    const double copy = copy_bandwidth() / 1e9;
    DeviceBuffer<uint8_t> buf(std::size_t(2) << 30);
    cuda_check(cudaMemset(buf.get(), 0x5a, buf.size()), "memset");
    DeviceBuffer<unsigned> sink(std::size_t(sms) * 64);
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n\n", prop.name, sms, copy);
    std::printf("| blocks | threads | loads in flight per thread | read GB/s | of copy | per SM in use GB/s |\n");
    std::printf("|---|---|---|---|---|---|\n");
    auto row = [&](int grid, int threads, int depth, double gbps) {
        const int used = std::min(grid, sms);
        std::printf("| %d | %d | %d | %.0f | %.0f%% | %.1f |\n", grid, threads, depth, gbps, 100.0 * gbps / copy,
                    gbps / used);
    };
    for (int per_sm : {1, 2, 4, 8})
        for (int threads : {256, 1024})
            if (per_sm * threads <= 2048) {
                const int grid = per_sm * sms;
                row(grid, threads, 1, read_gbps<1>(buf, grid, threads, sink.get()));
                row(grid, threads, 4, read_gbps<4>(buf, grid, threads, sink.get()));
                row(grid, threads, 8, read_gbps<8>(buf, grid, threads, sink.get()));
            }
    // One 1024-thread block per SM on fewer SMs (blocks go to distinct SMs while they fit one each).
    for (int used : {sms, sms / 2, sms / 4, 16}) row(used, 1024, 8, read_gbps<8>(buf, used, 1024, sink.get()));
    return 0;
}
