// Kernel launch with programmatic dependent launch (PDL, sm_90): a kernel launched this way may be scheduled
// while its predecessor in the stream is still running, hiding the launch latency and the ramp-up of each of
// the ~10 small kernels per layer of a decode step (also inside CUDA graphs, where PDL becomes a programmatic
// edge). Every kernel of this library calls pdl_wait() before touching memory its predecessor may write, which
// blocks until the predecessor grid has completed and its writes are visible — so correctness never depends on
// the attribute. pdl_wait() then releases the next kernel at once (launch_dependents): once every block of this
// grid has passed it, the next grid's blocks may take free SM slots and run their own prologue up to their
// pdl_wait() while this grid works, instead of being launched only when it ends. All of this grid's blocks have
// started by then, so none of them can be kept from a slot by the waiting ones. Private to kernels/.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace loradesk::kernels::detail {

bool pdl_enabled();

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Asks L2 for the line holding ptr without waiting for it: kernels name the first weights they will stream
// before their pdl_wait(), so that DRAM latency overlaps the predecessor (weights never depend on it).
__device__ __forceinline__ void prefetch_l2(const void* ptr) { asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr)); }

template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   Args&&... args) {
    cudaLaunchAttribute attr[2];
    unsigned n_attrs = 0;
    if (pdl_enabled()) {
        attr[n_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n_attrs++].val.programmaticStreamSerializationAllowed = 1;
    }
    // The stream's priority, named on the launch so that a graph captured from it keeps it (graphs instantiated
    // with cudaGraphInstantiateFlagUseNodePriority schedule by node priority, not by the stream they replay in).
    int priority = 0;
    if (cudaStreamGetPriority(stream, &priority) == cudaSuccess && priority != 0) {
        attr[n_attrs].id = cudaLaunchAttributePriority;
        attr[n_attrs++].val.priority = priority;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = attr, cfg.numAttrs = n_attrs;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace loradesk::kernels::detail
