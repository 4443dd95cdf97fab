// A CUPTI injection library that records every kernel a process runs, graph nodes included, with its start and
// end on the GPU clock: the per-kernel timeline of a decode step, which nsys would give but the GPU machine does
// not have. Load it with CUDA_INJECTION64_PATH=libkernel_trace.so (the driver calls InitializeInjection at
// cuInit); it writes one CSV line per kernel to $LORADESK_KERNEL_TRACE at exit. bench/step_trace.py reads it.
// Built on the GPU machine by bench/cupti/build.sh against the toolkit's CUPTI (not part of the CMake build: the
// Debian development machine has no CUPTI). KREC names the newest kernel record of the CUPTI headers in use.
#include <cupti.h>

#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#ifndef KREC
#error "build with -DKREC=CUpti_ActivityKernelN (bench/cupti/build.sh picks N)"
#endif

namespace {

struct Row {
    uint64_t start, end;
    uint32_t graph_id, graph_node, stream;
    int32_t grid, block, regs, smem;
    std::string name;
};

std::mutex g_mutex;
std::vector<Row> g_rows;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *size = 16u << 20;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *max_records = 0;
}

std::string demangled(const char* name) {
    if (!name) return "?";
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string s = status == 0 && d ? d : name;
    std::free(d);
    for (char& c : s)
        if (c == ',' || c == '\n') c = ';';  // one CSV field
    return s;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const auto* k = reinterpret_cast<const KREC*>(record);
        g_rows.push_back({k->start, k->end, k->graphId, uint32_t(k->graphNodeId), k->streamId,
                          k->gridX * k->gridY * k->gridZ, k->blockX * k->blockY * k->blockZ, k->registersPerThread,
                          k->staticSharedMemory + k->dynamicSharedMemory, demangled(k->name)});
    }
    std::free(buffer);
}

void at_exit() {
    cuptiActivityFlushAll(1);
    const char* path = std::getenv("LORADESK_KERNEL_TRACE");
    FILE* f = std::fopen(path ? path : "kernel_trace.csv", "w");
    if (!f) return;
    std::fprintf(f, "start_ns,end_ns,graph_id,graph_node,stream,grid,block,regs,smem,name\n");
    std::lock_guard lock(g_mutex);
    for (const Row& r : g_rows)
        std::fprintf(f, "%llu,%llu,%u,%u,%u,%d,%d,%d,%d,%s\n", (unsigned long long)r.start, (unsigned long long)r.end,
                     r.graph_id, r.graph_node, r.stream, r.grid, r.block, r.regs, r.smem, r.name.c_str());
    std::fclose(f);
    std::fprintf(stderr, "kernel_trace: %zu kernels -> %s\n", g_rows.size(), path ? path : "kernel_trace.csv");
}

}  // namespace

extern "C" int InitializeInjection(void) {
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        std::fprintf(stderr, "kernel_trace: CUPTI refused the activity buffers\n");
        return 0;
    }
    std::atexit(at_exit);
    return 1;
}
