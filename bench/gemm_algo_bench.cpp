// gemm_algo_bench: the runner's bf16 projections (Y[n, out] = X[n, in] W[out, in]^T, cublasGemmEx with
// CUBLAS_GEMM_DEFAULT as cuda_forward.cpp calls it) against every algorithm cuBLASLt's heuristic offers for the same
// problem, at Llama-7B and Qwen3-8B shapes and decode batch sizes. The weights rotate through copies that together
// exceed the L2 (in a step every weight comes from DRAM once). Prints, per site and token count, the default's time,
// the best offered algorithm's, its index in the heuristic's order, and both against the weight floor (bytes / the
// device copy bandwidth). Each algorithm's output is checked against the default's first.
//
//   gemm_algo_bench [TOKENS]   (comma-separated token counts; default 16,32,64,128,256)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "device_buffer.h"

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

struct LtProblem {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    LtProblem(int n, int in, int out) {
        ok(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
        const cublasOperation_t t = CUBLAS_OP_T;
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)), "transa");
        ok(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, uint64_t(in), uint64_t(out), in), "layout a");
        ok(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, uint64_t(in), uint64_t(n), in), "layout b");
        ok(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, uint64_t(out), uint64_t(n), out), "layout d");
    }
    ~LtProblem() {
        cublasLtMatrixLayoutDestroy(d), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(a);
        cublasLtMatmulDescDestroy(desc);
    }
};

float max_rel_diff(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y) {
    auto f = [](uint16_t h) {
        const uint32_t u = uint32_t(h) << 16;
        float v;
        std::memcpy(&v, &u, 4);
        return v;
    };
    double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double a = f(x[i]), b = f(y[i]);
        num += (a - b) * (a - b), den += b * b;
    }
    return float(std::sqrt(num / std::max(den, 1e-30)));
}

void bench_site(cublasHandle_t h, cublasLtHandle_t lt, const Model& m, const Site& s, int n, double bw, void* ws) {
    const std::size_t w_elems = std::size_t(s.in) * s.out;
    const int copies = int(std::max<std::size_t>(2, kRotateBytes / (w_elems * 2)));
    DeviceBuffer<uint16_t> w(w_elems * copies), x(std::size_t(n) * s.in), y0(std::size_t(n) * s.out),
        y1(std::size_t(n) * s.out);
    {  // small bf16 values of both signs, so a wrong algorithm shows
        std::vector<uint16_t> hx(std::size_t(n) * s.in), hw(w_elems);
        uint32_t r = 12345;
        auto next = [&] {
            r = r * 1664525u + 1013904223u;
            const float v = (float((r >> 9) & 0x3fff) / 16384.0f - 0.5f) * 0.25f;
            uint32_t u;
            std::memcpy(&u, &v, 4);
            return uint16_t(u >> 16);
        };
        for (auto& v : hx) v = next();
        for (auto& v : hw) v = next();
        cuda_check(cudaMemcpy(x.get(), hx.data(), hx.size() * 2, cudaMemcpyHostToDevice), "upload");
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

    LtProblem pr(n, s.in, s.out);
    cublasLtMatmulPreference_t pref = nullptr;
    ok(cublasLtMatmulPreferenceCreate(&pref), "pref");
    ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                            sizeof(kWorkspace)),
       "pref ws");
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos];
    int n_res = 0;
    ok(cublasLtMatmulAlgoGetHeuristic(lt, pr.desc, pr.a, pr.b, pr.d, pr.d, pref, kMaxAlgos, res, &n_res), "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    float best = 1e30f, first = 0.0f;
    int best_i = -1;
    for (int i = 0; i < n_res; ++i) {
        auto run = [&] {
            ok(cublasLtMatmul(lt, pr.desc, &one, weights(), pr.a, x.get(), pr.b, &zero, y1.get(), pr.d, y1.get(), pr.d,
                              &res[i].algo, ws, kWorkspace, nullptr),
               "cublasLtMatmul");
        };
        run();
        cuda_check(cudaDeviceSynchronize(), "algo");
        if (max_rel_diff(y1.download(), want) > 1e-2f) {
            std::printf("  algo %d disagrees with the default: skipped\n", i);
            continue;
        }
        const float t = median_ms(run, copies);
        if (i == 0) first = t;
        if (t < best) best = t, best_i = i;
    }
    const double floor_us = double(w_elems) * 2 / bw * 1e6;
    std::printf("| %s | %s %d->%d | %d | %.1f (%.0f%%) | %.1f | %.1f (%.0f%%, #%d of %d) |\n", m.name, s.name, s.in,
                s.out, n, t_default * 1e3, 100.0 * floor_us / (t_default * 1e3), first * 1e3, best * 1e3,
                100.0 * floor_us / (best * 1e3), best_i, n_res);
}

std::vector<int> parse_list(const char* s) {
    std::vector<int> v;
    for (const char* p = s; *p;) {
        v.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> tokens = argc > 1 ? parse_list(argv[1]) : std::vector<int>{16, 32, 64, 128, 256};
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
        "floor, index) |\n|---|---|---|---|---|---|\n");
    for (const Model& m : kModels)
        for (int n : tokens)
            for (const Site& s : m.sites) bench_site(h, lt, m, s, n, bw, ws.get());
    cublasLtDestroy(lt);
    cublasDestroy(h);
    return 0;
}
