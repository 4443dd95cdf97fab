// gemv_bench: the decode-sized projections of Qwen3-0.6B and Qwen3-8B (batch 1-8 tokens) through cuBLAS (as
// the runner calls it) and through the skinny GEMM (kernels/gemv.cu), with and without a fused LoRA (the test
// set-up of gemv_case.h: tokens on slots of rank 5, 37 and 1, max rank 40), each beside its memory floor
// (weight bytes / measured copy bandwidth). Then a whole step's worth of projections (every layer's distinct
// weights + lm_head) captured in one CUDA graph, cuBLAS vs skinny GEMM: the ceiling the GEMMs alone put on batch-1
// decode. Each kernel is checked against its twin first.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "bench_timing.h"
#include "device_buffer.h"
#include "gemv_case.h"
#include "launchers.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

struct Shape {
    const char* name;
    int in, out;
    bool swiglu;
    int lora_slices;  // how the runner fuses LoRA modules at this site
};

struct Model {
    const char* name;
    int layers, vocab, hidden;
    Shape sites[4];
};

const Model kModels[] = {
    {"Qwen3-0.6B",
     28,
     151936,
     1024,
     {{"qkv", 1024, 4096, false, 3},
      {"o", 2048, 1024, false, 1},
      {"gate_up", 1024, 6144, true, 2},
      {"down", 3072, 1024, false, 1}}},
    {"Qwen3-8B",
     36,
     151936,
     4096,
     {{"qkv", 4096, 6144, false, 3},
      {"o", 4096, 4096, false, 1},
      {"gate_up", 4096, 24576, true, 2},
      {"down", 12288, 4096, false, 1}}},
};

void cublas_ok(cublasStatus_t s) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS call failed");
}

void cublas_gemm(cublasHandle_t h, const uint16_t* w, const uint16_t* x, int n, int in, int out, void* y, bool f32) {
    const float one = 1.0f, zero = 0.0f;
    cublas_ok(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, CUDA_R_16BF, in, x, CUDA_R_16BF, in, &zero,
                           y, f32 ? CUDA_R_32F : CUDA_R_16BF, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// A device copy of a GemvCase (weights, x, LoRA slots, segments) and its params.
constexpr int kSyncCounters = 2 * 2048;  // a pair per launch, > the 1,005 launches of one median_ms(..., 20)

struct DeviceCase {
    GemvCase c;
    DeviceBuffer<uint16_t> w, x, y;
    DeviceBuffer<float> xa, scales;
    DeviceBuffer<int32_t> ranks, segp, segs, sync;
    std::vector<std::unique_ptr<DeviceBuffer<uint16_t>>> ab;
    GemvParams p;
    explicit DeviceCase(GemvCase cc) : c(std::move(cc)), w(c.w), x(c.x), y(std::size_t(c.n) * c.out * 2 + 64) {
        xa.resize(c.xa.size() + 1), scales.upload(c.scales), ranks.upload(c.ranks);
        segp.upload(c.seg_indptr.empty() ? std::vector<int32_t>{0} : c.seg_indptr);
        segs.upload(c.seg_slot.empty() ? std::vector<int32_t>{0} : c.seg_slot);
        sync.upload(std::vector<int32_t>(kSyncCounters, 0));
        std::vector<const uint16_t*> a, bt;
        for (int j = 0; j < c.n_slices; ++j) {
            ab.push_back(std::make_unique<DeviceBuffer<uint16_t>>(c.a[j]));
            a.push_back(ab.back()->get());
            ab.push_back(std::make_unique<DeviceBuffer<uint16_t>>(c.bt[j]));
            bt.push_back(ab.back()->get());
        }
        p = c.params(w.get(), x.get(), nullptr, y.get(), xa.get(), a, bt, ranks.get(), scales.get(), segp.get(),
                     segs.get(), sync.get());
    }
};

void bench_site(cublasHandle_t h, const Model& m, const Shape& s, int n, double bw) {
    DeviceCase plain(GemvCase(n, s.in, s.out, s.swiglu, false, 0, false, 1));
    DeviceCase lora(GemvCase(n, s.in, s.out, s.swiglu, false, s.lora_slices, false, 2));
    DeviceBuffer<uint16_t> y(std::size_t(n) * s.out);
    const float t_cublas =
        median_ms([&] { cublas_gemm(h, plain.w.get(), plain.x.get(), n, s.in, s.out, y.get(), false); }, 20);
    const float t_gemv = median_ms([&] { gemv(plain.p, nullptr); }, 20);
    // A fresh zeroed counter pair per launch (the runner zeroes them with one memset per step).
    int launch_no = 0;
    const float t_lora = median_ms(
        [&] {
            GemvParams q = lora.p;
            q.sync = lora.sync.get() + 2 * (launch_no++ % (kSyncCounters / 2));
            gemv(q, nullptr);
        },
        20);
    const double bytes = double(s.in) * s.out * 2, floor_us = bytes / bw * 1e6;
    std::printf("| %s | %s %d->%d | %d | %.1f | %.1f (%.0f%%) | %.1f | %.1f |\n", m.name, s.name, s.in, s.out, n,
                t_cublas * 1e3, t_gemv * 1e3, 100.0 * floor_us / (t_gemv * 1e3), t_lora * 1e3, floor_us);
}

// All projections of every layer (distinct weights) + lm_head, batch n, in one graph: cuBLAS vs gemv.
void bench_step(cublasHandle_t h, const Model& m, int n, double bw) {
    std::size_t layer_elems = 0;
    for (const Shape& s : m.sites) layer_elems += std::size_t(s.in) * s.out;
    const std::size_t total = layer_elems * m.layers + std::size_t(m.vocab) * m.hidden;
    DeviceBuffer<uint16_t> w(total), x(std::size_t(n) * 16384), y(std::size_t(n) * 32768);
    DeviceBuffer<float> logits(std::size_t(n) * m.vocab);
    cuda_check(cudaMemset(w.get(), 0x3c, total * 2), "memset");
    cuda_check(cudaMemset(x.get(), 0x3c, std::size_t(n) * 16384 * 2), "memset");
    auto step = [&](bool use_gemv, cudaStream_t st) {
        const uint16_t* p = w.get();
        for (int l = 0; l < m.layers; ++l)
            for (const Shape& s : m.sites) {
                if (use_gemv) {
                    GemvParams g;
                    g.w = p, g.x = x.get(), g.x_row_stride = s.in, g.n_tokens = n, g.in = s.in, g.out_rows = s.out;
                    g.swiglu = s.swiglu, g.y = y.get(), g.y_row_stride = s.swiglu ? s.out / 2 : s.out;
                    cuda_check(gemv(g, st), "gemv");
                } else {
                    cublas_gemm(h, p, x.get(), n, s.in, s.out, y.get(), false);
                }
                p += std::size_t(s.in) * s.out;
            }
        if (use_gemv) {
            GemvParams g;
            g.w = p, g.x = x.get(), g.x_row_stride = m.hidden, g.n_tokens = n, g.in = m.hidden, g.out_rows = m.vocab;
            g.y = logits.get(), g.y_row_stride = m.vocab, g.f32_out = true;
            cuda_check(gemv(g, st), "gemv");
        } else {
            cublas_gemm(h, p, x.get(), n, m.hidden, m.vocab, logits.get(), true);
        }
    };
    cudaStream_t st;
    cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    cublas_ok(cublasSetStream(h, st));
    float t[2];
    for (int g = 0; g < 2; ++g) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
        step(g == 1, st);
        cuda_check(cudaStreamEndCapture(st, &graph), "capture");
        cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
        t[g] = median_ms([&] { cudaGraphLaunch(exec, nullptr); });
        cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
    }
    cublas_ok(cublasSetStream(h, nullptr));
    cudaStreamDestroy(st);
    const double floor_ms = double(total) * 2 / bw * 1e3;
    std::printf("| %s | %d | %.3f (%.0f tok/s) | %.3f (%.0f tok/s) | %.3f (%.0f%% of floor) |\n", m.name, n, t[0],
                n * 1e3 / t[0], t[1], n * 1e3 / t[1], floor_ms, 100.0 * floor_ms / t[1]);
}

void check_against_twin() {
    for (int n : {1, 3, 8}) {
        DeviceCase d(GemvCase(n, 1032, 96, false, false, 3, false, 9));
        cuda_check(gemv(d.p, nullptr), "gemv");
        cuda_check(cudaDeviceSynchronize(), "gemv");
        GemvCase& c = d.c;
        std::vector<uint16_t> want(c.y_elems());
        std::vector<float> xa = c.xa;
        std::vector<const uint16_t*> a, bt;
        for (int j = 0; j < c.n_slices; ++j) a.push_back(c.a[j].data()), bt.push_back(c.bt[j].data());
        ref::gemv(c.params(c.w.data(), c.x.data(), nullptr, want.data(), xa.data(), a, bt, c.ranks.data(),
                           c.scales.data(), c.seg_indptr.data(), c.seg_slot.data(), nullptr));
        auto got = d.y.download();
        got.resize(want.size());
        if (rel_l2(to_f32(got), to_f32(want)) > 4e-3) throw std::runtime_error("gemv disagrees with its twin");
    }
}

}  // namespace

int main() {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    const double bw = copy_bandwidth();
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n\n", prop.name, prop.multiProcessorCount, bw / 1e9);
    check_against_twin();
    cublasHandle_t h;
    cublas_ok(cublasCreate(&h));
    std::printf(
        "| model | projection | tokens | cuBLAS us | skinny GEMM us (of floor) | + fused LoRA us (3 slots, ranks "
        "5/37/1) | floor us |\n"
        "|---|---|---|---|---|---|---|\n");
    for (const Model& m : kModels)
        for (const Shape& s : m.sites)
            for (int n : {1, 2, 4, 8}) bench_site(h, m, s, n, bw);
    std::printf(
        "\nAll projections of a decode step in one CUDA graph (no attention, no norms):\n\n"
        "| model | tokens | cuBLAS ms | skinny GEMM ms | weight floor ms |\n|---|---|---|---|---|\n");
    for (const Model& m : kModels)
        for (int n : {1, 8}) bench_step(h, m, n, bw);
    cublasDestroy(h);
    return 0;
}
