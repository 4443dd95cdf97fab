// The LoRA shrink run inside a projection's own launch (gemv.cu, quant_mma.cu): xa = x · Aᵀ is shared by every
// output column, so some blocks compute it and the others read it back through memory before their epilogue.
// Private to kernels/.
//
// Forward progress (issue #19). The shrink is cut into n_units units, a unit being one shrink row per warp of a
// block. Units are not tied to block indices: a block takes one by atomicAdd on claims (sync[1]), runs it, and
// counts it in published (sync[0]). The first n_units blocks of the grid do nothing else; every other block does
// its own work first and then, if published < n_units, takes any unit still unclaimed itself, and waits only once
// every unit is claimed. A block therefore only ever waits for units claimed by blocks that were running when they
// claimed them and that finish them without waiting for anything (a unit has no waits; its barrier is within the
// block). So the launch completes whatever order CUDA dispatches the blocks in and however few of them fit on the
// GPU beside other work (MPS, a display, another stream): one resident block would run every unit and then its
// own work. No co-residency, occupancy-sized grid or cooperative launch is assumed. PDL does not change this: a
// dependent kernel's blocks are released only once every block of this one has started (each triggers in
// pdl_wait()), so they never hold a slot one of ours still needs, and they wait in griddepcontrol.wait; this
// kernel's blocks that start before their predecessor ends wait there too. quant_mma's shrink-first blocks claim
// one unit before that wait (claim_shrink_unit), so that its A row is on its way while the predecessor finishes:
// the wait ends without anything from this grid (every block of the predecessor is running by then and waits on
// nothing of ours), so a unit claimed there is still held by a running block that finishes it without waiting for
// this grid.
// In the usual order the first blocks have published long before the others reach their epilogue, so a
// consumer pays one acquire load; claims by consumers only happen when the dispatch order is unusual.
//
// sync points to two int32 that are zero when the launch starts; the caller zeroes them (kernel_params.h says
// why the kernels do not).
#pragma once

#include <cstdint>

#include "launch_pdl.cuh"

namespace loradesk::kernels::detail {

__device__ __forceinline__ int load_acquire(const int32_t* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ int load_relaxed(const int32_t* p) {
    int v;
    asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Whole block: claims the next unit (n_units or more once every unit is claimed). The block must publish_shrink_unit
// a unit it got before it claims again: that barrier is also what keeps the shared claim until every thread read it.
__device__ __forceinline__ int claim_shrink_unit(int32_t* sync) {
    __shared__ int unit;
    if (threadIdx.x == 0) unit = atomicAdd(sync + 1, 1);
    __syncthreads();
    return unit;
}

// Whole block, once each warp stored and fenced its xa rows of the unit: counts it in published.
__device__ __forceinline__ void publish_shrink_unit(int32_t* sync) {
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(sync, 1);
}

// Whole block: claims and runs units until none is left unclaimed. run_unit(u) runs unit u on the whole block;
// each of its warps must make its xa stores visible device-wide (__threadfence) before returning.
template <class RunUnit>
__device__ void run_shrink_units(int32_t* sync, int n_units, RunUnit run_unit) {
    for (;;) {
        const int u = claim_shrink_unit(sync);
        if (u >= n_units) return;
        run_unit(u);
        publish_shrink_unit(sync);
    }
}

// One warp: asks L2 for every 128-byte line of the n bf16 values at row, without waiting. Shrink blocks call it
// before their PDL wait for A rows (adapter weights, in place before the step: launchers.h): once the projection's
// weight stream has started, a load that misses L2 queues behind it in DRAM, and the epilogues wait for the shrink.
// gemv.cu's ask for the unit their block index names (the unit they then claim may be another one; each unit's rows
// were asked for by its namesake all the same); quant_mma's for the part of their claimed row they do not load early.
__device__ __forceinline__ void prefetch_row_l2(const uint16_t* row, int n, int lane) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(row) / 128,
                    last = reinterpret_cast<uintptr_t>(row + n - 1) / 128;
    for (uintptr_t line = first + lane; line <= last; line += 32)
        prefetch_l2(reinterpret_cast<const void*>(line * 128));
}

// Thread 0 only: polls with plain acquire loads (atomics would queue behind the publishers' atomicAdds).
__device__ __forceinline__ void wait_published(const int32_t* sync, int n_units) {
    while (load_acquire(sync) < n_units) __nanosleep(32);
}

// Whole block: false once every unit is published; true when some unit may still be unclaimed (its block may
// not even be dispatched yet), and the block must then run units itself before it waits.
__device__ __forceinline__ bool shrink_needs_help(const int32_t* sync, int n_units) {
    __shared__ int help;
    if (threadIdx.x == 0) {
        help = 0;
        if (load_acquire(sync) < n_units) {
            if (load_relaxed(sync + 1) < n_units)
                help = 1;
            else
                wait_published(sync, n_units);  // every unit is held by a running block
        }
    }
    __syncthreads();
    return help;
}

// Whole block, before reading xa: returns once every unit is published, having run unclaimed ones itself.
template <class RunUnit>
__device__ void await_shrink(int32_t* sync, int n_units, RunUnit run_unit) {
    if (!shrink_needs_help(sync, n_units)) return;
    run_shrink_units(sync, n_units, run_unit);
    if (threadIdx.x == 0) wait_published(sync, n_units);
    __syncthreads();
}

}  // namespace loradesk::kernels::detail
