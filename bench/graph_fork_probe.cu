// graph_fork_probe: whether a kernel that reads a side stream's result still launches early (PDL) inside a captured
// CUDA graph, in the shape of the runner's LoRA delta sites: per site, x's writer -> side stream (shrink, expand)
// beside the base kernel on the compute stream -> join -> the reader of both, which is the next site's x writer. Three
// ways:
//   chained   the side stream forks by waiting on an event each site, so each shrink also depends on the previous
//             site's expand (what repeated cudaStreamWaitEvent on one stream captures);
//   snapshot  the side stream's capture dependencies are set to exactly x's writer each site
//             (cudaStreamUpdateCaptureDependencies), as CudaRunner::Impl::fork_side does;
//   none      no side stream.
// Prints, per site, how long before its base kernel ended the reader started (median over replays); about the base
// kernel's run time when the reader launched early, about zero or less when it waited for the base kernel to end.
//
//   graph_fork_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr int kSites = 8;
constexpr unsigned long long kBaseNs = 20000;  // the base kernel's run time

#define CHECK(x)                                                 \
    do {                                                         \
        const cudaError_t e_ = (x);                              \
        if (e_ != cudaSuccess) {                                 \
            std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); \
            return false;                                        \
        }                                                        \
    } while (0)

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ void pdl_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
}

// The base kernel: a full wave of blocks that run for kBaseNs, then record when the last one ended.
__global__ void base_kernel(unsigned long long* ends, int site) {
    pdl_wait();
    const unsigned long long start = now_ns();
    while (now_ns() - start < kBaseNs) {
    }
    if (threadIdx.x == 0) atomicMax(ends + site, now_ns());
}

__global__ void side_kernel() { pdl_wait(); }

// The reader: records when its first block started, before it waits for its predecessors.
__global__ void reader_kernel(unsigned long long* starts, int site) {
    if (threadIdx.x == 0 && blockIdx.x == 0) starts[site] = now_ns();
    pdl_wait();
}

// Launched as the runner launches: programmatic stream serialization, and the stream's priority named on the launch.
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), int grid, int block, cudaStream_t stream, Args... args) {
    cudaLaunchAttribute attr[2] = {};
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    unsigned n = 1;
    int priority = 0;
    if (cudaStreamGetPriority(stream, &priority) == cudaSuccess && priority != 0)
        attr[n].id = cudaLaunchAttributePriority, attr[n++].val.priority = priority;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.stream = stream, cfg.attrs = attr, cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

enum class Fork { chained, snapshot, none };

bool probe(Fork fork, cudaStream_t main, cudaStream_t side, unsigned long long* times, int sms) {
    cudaEvent_t fork_mark, join_mark;
    CHECK(cudaEventCreateWithFlags(&fork_mark, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join_mark, cudaEventDisableTiming));
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
    CHECK(launch(side_kernel, 1, 1024, main));  // the first x writer
    for (int site = 0; site < kSites; ++site) {
        if (fork != Fork::none) {
            CHECK(cudaEventRecord(fork_mark, main));
            cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
            CHECK(cudaStreamIsCapturing(side, &status));
            if (fork == Fork::snapshot && status == cudaStreamCaptureStatusActive) {
                const cudaGraphNode_t* nodes = nullptr;
                const cudaGraphEdgeData* edges = nullptr;
                std::size_t n = 0;
                CHECK(cudaStreamGetCaptureInfo(main, &status, nullptr, nullptr, &nodes, &edges, &n));
                std::vector<cudaGraphNode_t> x_writer(nodes, nodes + n);
                std::vector<cudaGraphEdgeData> edge_data =
                    edges ? std::vector<cudaGraphEdgeData>(edges, edges + n) : std::vector<cudaGraphEdgeData>(n);
                CHECK(cudaStreamUpdateCaptureDependencies(side, x_writer.data(), edge_data.data(), n,
                                                          cudaStreamSetCaptureDependencies));
            } else {
                CHECK(cudaStreamWaitEvent(side, fork_mark, 0));
            }
            CHECK(launch(side_kernel, 4, 256, side));  // shrink
            CHECK(launch(side_kernel, 4, 256, side));  // expand
        }
        CHECK(launch(base_kernel, 3 * sms, 128, main, times, site));
        if (fork != Fork::none) {
            CHECK(cudaEventRecord(join_mark, side));
            CHECK(cudaStreamWaitEvent(main, join_mark, 0));
        }
        CHECK(launch(reader_kernel, 1, 1024, main, times + kSites, site));
    }
    CHECK(cudaStreamEndCapture(main, &graph));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority));
    constexpr int kReplays = 21;
    std::vector<std::vector<double>> lead(kSites);
    for (int r = 0; r < kReplays; ++r) {
        CHECK(cudaMemsetAsync(times, 0, 2 * kSites * sizeof(unsigned long long), main));
        CHECK(cudaGraphLaunch(exec, main));
        unsigned long long h[2 * kSites];
        CHECK(cudaMemcpyAsync(h, times, sizeof h, cudaMemcpyDeviceToHost, main));
        CHECK(cudaStreamSynchronize(main));
        for (int s = 0; s < kSites && r > 0; ++s) lead[s].push_back((double(h[s]) - double(h[kSites + s])) / 1e3);
    }
    std::printf("%-9s reader started before its base kernel ended (us):", fork == Fork::chained    ? "chained"
                                                                          : fork == Fork::snapshot ? "snapshot"
                                                                                                   : "none");
    for (auto& l : lead) {
        std::sort(l.begin(), l.end());
        std::printf(" %5.1f", l[l.size() / 2]);
    }
    std::printf("\n");
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaEventDestroy(fork_mark));
    CHECK(cudaEventDestroy(join_mark));
    return true;
}

}  // namespace

int main() {
    int least = 0, greatest = 0, sms = 0;
    if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
        std::printf("graph_fork_probe: no usable CUDA device\n");
        return 1;
    }
    cudaStream_t main_stream, side_stream;
    unsigned long long* times = nullptr;
    if (cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithPriority(&side_stream, cudaStreamNonBlocking, greatest) != cudaSuccess ||
        cudaMalloc(&times, 2 * kSites * sizeof(unsigned long long)) != cudaSuccess) {
        std::printf("graph_fork_probe: setup failed\n");
        return 1;
    }
    std::printf("%d sites, base kernel %.0f us on %d blocks of 128 threads\n", kSites, kBaseNs / 1e3, 3 * sms);
    bool ok = true;
    for (Fork f : {Fork::chained, Fork::snapshot, Fork::none})
        ok = probe(f, main_stream, side_stream, times, sms) && ok;
    cudaFree(times);
    return ok ? 0 : 1;
}
