// gemm_algo_bench: bf16 projections (Y[n, out] = X[n, in] W[out, in]^T) through cublasGemmEx with CUBLAS_GEMM_DEFAULT
// (what cuda_forward.cpp called before the runner timed cuBLASLt's offers itself, kernels/bf16_gemm.h) against every
// algorithm cuBLASLt's heuristic offers for the same problem, at Llama-7B and Qwen3-8B shapes and decode batch sizes.
// The weights rotate through copies that together exceed the L2 (in a step every weight comes from DRAM once). Prints,
// per site and token count, the default's time, the best offered algorithm's, its index in the heuristic's order, and
// both against the weight floor (bytes / the device copy bandwidth). Each algorithm's output is checked against the
// default's first. With --search, also the fastest of every configuration cuBLASLt accepts (gemm_algo_search.h),
// with the configuration named.
//
//   gemm_algo_bench [--search] [TOKENS]   (comma-separated token counts; default 16,32,64,128,256)
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_args.h"
#include "bench_timing.h"
#include "device_buffer.h"
#include "gemm_algo_search.h"
#include "kernel_test_util.h"
#include "lt_plan.h"

using namespace loradesk::kernels::test;

namespace {

struct Site {
    const char* name;
    int in, out;
};

struct Model {
    const char* name;
    Site sites[4];
};

const Model kModels[] = {
    {"Llama-7B", {{"qkv", 4096, 12288}, {"o", 4096, 4096}, {"gate_up", 4096, 22016}, {"down", 11008, 4096}}},
    {"Qwen3-8B", {{"qkv", 4096, 6144}, {"o", 4096, 4096}, {"gate_up", 4096, 24576}, {"down", 12288, 4096}}},
};

constexpr std::size_t kRotateBytes = std::size_t(512) << 20;  // > 10x the H100/H200 L2
constexpr std::size_t kWorkspace = std::size_t(32) << 20;
constexpr int kMaxAlgos = 16;

void ok(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + std::to_string(s));
}

void bench_site(cublasHandle_t h, cublasLtHandle_t lt, const Model& m, const Site& s, int n, double bw, void* ws,
                bool search) {
    const std::size_t w_elems = std::size_t(s.in) * s.out;
    const int copies = int(std::max<std::size_t>(2, kRotateBytes / (w_elems * 2)));
    DeviceBuffer<uint16_t> w(w_elems * copies), x(std::size_t(n) * s.in), y0(std::size_t(n) * s.out),
        y1(std::size_t(n) * s.out);
    {  // small bf16 values of both signs, so a wrong algorithm shows
        std::mt19937 rng(uint32_t(s.in) * 31 + uint32_t(s.out) + uint32_t(n));
        x.upload(random_bf16(rng, std::size_t(n) * s.in, -0.125f, 0.125f));
        const std::vector<uint16_t> hw = random_bf16(rng, w_elems, -0.125f, 0.125f);
        for (int c = 0; c < copies; ++c)
            cuda_check(cudaMemcpy(w.get() + c * w_elems, hw.data(), w_elems * 2, cudaMemcpyHostToDevice), "upload");
    }
    const float one = 1.0f, zero = 0.0f;
    int turn = 0;
    auto weights = [&] { return w.get() + std::size_t(turn++ % copies) * w_elems; };
    auto run_default = [&](uint16_t* y) {
        ok(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.out, n, s.in, &one, weights(), CUDA_R_16BF, s.in, x.get(),
                        CUDA_R_16BF, s.in, &zero, y, CUDA_R_16BF, s.out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           "cublasGemmEx");
    };
    const float t_default = median_ms([&] { run_default(y0.get()); }, copies);
    std::vector<uint16_t> want = y0.download();

    loradesk::kernels::detail::LtPlan pr;
    if (!loradesk::kernels::detail::lt_describe_bf16(pr, s.out, s.in, n, s.in, s.out, false))
        throw std::runtime_error("cuBLASLt refused the descriptors");
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos];
    const int n_res = loradesk::kernels::detail::lt_offers(lt, pr, kWorkspace, res, kMaxAlgos);
    float best = 1e30f, first = 0.0f;
    int best_i = -1;
    for (int i = 0; i < n_res; ++i) {
        auto run = [&] {
            cuda_check(loradesk::kernels::detail::lt_matmul(lt, pr, res[i].algo, weights(), x.get(), y1.get(), ws,
                                                            kWorkspace, nullptr),
                       "cublasLtMatmul");
        };
        run();
        cuda_check(cudaDeviceSynchronize(), "algo");
        if (rel_l2(to_f32(y1.download()), to_f32(want)) > 1e-2) {
            std::printf("  algo %d disagrees with the default: skipped\n", i);
            continue;
        }
        const float t = median_ms(run, copies);
        if (i == 0) first = t;
        if (t < best) best = t, best_i = i;
    }
    const double floor_us = double(w_elems) * 2 / bw * 1e6;
    std::printf("| %s | %s %d->%d | %d | %.1f (%.0f%%) | %.1f | %.1f (%.0f%%, #%d of %d) |", m.name, s.name, s.in,
                s.out, n, t_default * 1e3, 100.0 * floor_us / (t_default * 1e3), first * 1e3, best * 1e3,
                100.0 * floor_us / (best * 1e3), best_i, n_res);
    if (!search) {
        std::printf("\n");
        return;
    }
    const std::vector<gemm_search::Candidate> cands = gemm_search::enumerate(lt, pr, kWorkspace);
    auto launch = [&](const cublasLtMatmulAlgo_t& a) {
        return loradesk::kernels::detail::lt_matmul(lt, pr, a, weights(), x.get(), y1.get(), ws, kWorkspace, nullptr);
    };
    auto quick = [&](const cublasLtMatmulAlgo_t& a) -> float {  // the least of 3 rounds through the copies
        if (launch(a) != cudaSuccess) return cudaGetLastError(), -1.0f;
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0), cudaEventCreate(&e1);
        float least = 1e30f;
        for (int r = 0; r < 3; ++r) {
            cudaEventRecord(e0);
            for (int c = 0; c < copies; ++c) launch(a);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            least = std::min(least, ms / float(copies));
        }
        cudaEventDestroy(e0), cudaEventDestroy(e1);
        return cudaGetLastError() == cudaSuccess ? least : -1.0f;
    };
    auto full = [&](const cublasLtMatmulAlgo_t& a) -> float {
        if (launch(a) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) return cudaGetLastError(), -1.0f;
        if (rel_l2(to_f32(y1.download()), to_f32(want)) > 1e-2) return -1.0f;
        return median_ms([&] { cuda_check(launch(a), "cublasLtMatmul"); }, copies);
    };
    const std::vector<gemm_search::Candidate> top = gemm_search::rank(cands, quick, full);
    if (top.empty()) {
        std::printf(" none of %zu |\n", cands.size());
        return;
    }
    std::printf(" %.1f (%.0f%%) of %zu: %s |\n", top[0].ms * 1e3, 100.0 * floor_us / (top[0].ms * 1e3), cands.size(),
                top[0].what.c_str());
    for (std::size_t i = 1; i < top.size() && i < 4; ++i)
        std::printf("|  |  |  |  |  |  | %.1f: %s |\n", top[i].ms * 1e3, top[i].what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows as they finish: a search can take minutes
    const bool search = argc > 1 && std::string(argv[1]) == "--search";
    const std::vector<int> tokens = int_list("gemm_algo_bench", argc, argv, search ? 2 : 1, {16, 32, 64, 128, 256});
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    const double bw = copy_bandwidth();
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n\n", prop.name, prop.multiProcessorCount, bw / 1e9);
    cublasHandle_t h;
    cublasLtHandle_t lt;
    ok(cublasCreate(&h), "cublasCreate");
    ok(cublasLtCreate(&lt), "cublasLtCreate");
    DeviceBuffer<uint8_t> ws(kWorkspace);
    ok(cublasSetWorkspace(h, ws.get(), kWorkspace), "workspace");
    std::printf(
        "| model | site | tokens | cublasGemmEx default us (of floor) | Lt heuristic #0 us | best Lt algo us (of "
        "floor, index) |%s\n|---|---|---|---|---|---|%s\n",
        search ? " best configuration searched us (of floor, of candidates) |" : "", search ? "---|" : "");
    for (const Model& m : kModels)
        for (int n : tokens)
            for (const Site& s : m.sites) bench_site(h, lt, m, s, n, bw, ws.get(), search);
    cublasLtDestroy(lt);
    cublasDestroy(h);
    return 0;
}
