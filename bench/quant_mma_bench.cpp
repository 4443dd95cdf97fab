// quant_mma_bench: the int4 / fp8 tensor-core GEMM (kernels/quant_mma.cu) at the call sites a Qwen3-8B decode step
// runs (q|k|v, o and gate|up fused as kernels/quant_pack.cpp fuses them, down), 8 to 64 tokens, beside what
// the same tokens cost otherwise in the same run: cuBLAS on bf16 weights, and the dequantize path it replaces
// (quant_dequantize to bf16, then cuBLAS). Each format is first checked against its twin with random data;
// timing uses constant-filled weights (no kernel branches on values) in enough copies to defeat the 50 MB L2,
// launched back to back in one CUDA graph (PDL on, as in a decode step). us = median per call site; GB/s =
// stored int4 bytes (weights, zeros, scales) / time. Then a sweep of column groups per block and k rows per block (0 =
// the default). Then, where cuBLASLt has it, the fp8 table: W8A8 (fp8_gemm.h, block-scaled and per-channel weights)
// beside the other fp8 paths and bf16, 1 to 2048 tokens. --fp8: the checks and that table only.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>

#include "bench_timing.h"
#include "device_buffer.h"
#include "fp8_gemm.h"
#include "kernel_test_util.h"
#include "quant_case.h"
#include "quant_dequant.h"
#include "quant_mma.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

struct Site {
    const char* name;
    int n, k;
};
constexpr Site kSites[] = {{"q|k|v", 6144, 4096}, {"o", 4096, 4096}, {"gate|up", 24576, 4096}, {"down", 4096, 12288}};
constexpr int kGroup = 128;

void cublas_ok(cublasStatus_t s) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "cuBLAS error %d\n", int(s));
        std::exit(1);
    }
}

// y [tokens, n] = x [tokens, k] w^T, w bf16 [n, k] row-major: the runner's gemm().
void gemm(cublasHandle_t h, const uint16_t* w, const uint16_t* x, int tokens, int k, int n, uint16_t* y) {
    const float one = 1.f, zero = 0.f;
    cublas_ok(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, tokens, k, &one, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k, &zero,
                           y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void check(QuantFormat f, int n, int k, int tokens) {
    QuantCase c(f, n, k, kGroup, false, f == QuantFormat::gptq_int4, Fp8Scaling::block128, 11u);
    std::mt19937 rng(5);
    auto x = random_bf16(rng, std::size_t(tokens) * k);
    std::vector<uint16_t> want(std::size_t(tokens) * n);
    ref::quant_mma(c.params(x.data(), k, want.data(), n, tokens, c.qweight.data(), c.qzeros.data(), c.s16.data(),
                            nullptr, c.w8.data(), c.w_scale.data(), nullptr));
    auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
    DeviceBuffer<uint16_t> dx(x), dy(want.size()), ds(nonempty(c.s16));
    DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros));
    DeviceBuffer<uint8_t> dw8(nonempty(c.w8)), dws(std::vector<uint8_t>(quant_mma_workspace_bytes(n, k), 0));
    DeviceBuffer<float> dsc(nonempty(c.w_scale));
    cuda_check(quant_mma(c.params(dx.get(), k, dy.get(), n, tokens, dqw.get(), dqz.get(), ds.get(), nullptr, dw8.get(),
                                  dsc.get(), dws.get()),
                         nullptr),
               "quant_mma");
    cuda_check(cudaDeviceSynchronize(), "quant_mma");
    const double err = rel_l2(to_f32(dy.download()), to_f32(want));
    std::printf("check %s %dx%d tokens %d: rel l2 %.2e\n",
                f == QuantFormat::awq_int4    ? "awq"
                : f == QuantFormat::gptq_int4 ? "gptq"
                                              : "fp8",
                n, k, tokens, err);
    if (!(err < 1e-3)) std::printf("QUANT MMA CHECK FAILED (timings below are of a wrong kernel)\n");
}

enum class Path { bf16_cublas, dequant_cublas, mma, fp8_w8a8, fp8_w8a8_channel };

Fp8Gemm* g_fp8_gemm = nullptr;  // the block-scaled fp8 GEMM (cuBLASLt), when this GPU has it

// Median us of one call site over `copies` weight copies captured in one graph.
double time_site(Path path, QuantFormat f, const Site& s, int tokens, int split_chunk, cublasHandle_t h,
                 int col_groups = 0) {
    const int n = s.n, k = s.k, groups = k / kGroup;
    const bool fp8 = f == QuantFormat::fp8_e4m3;
    const std::size_t w_bytes = path == Path::bf16_cublas ? std::size_t(n) * k * 2
                                : fp8                     ? std::size_t(n) * k
                                                          : std::size_t(n) * k / 2;
    const std::size_t z_bytes = fp8 ? 0 : std::size_t(groups) * n / 2;
    const std::size_t s_bytes = fp8 ? std::max(std::size_t((n + 127) / 128) * ((k + 127) / 128), std::size_t(n)) * 4
                                    : std::size_t(groups) * n * 2;
    const std::size_t per_copy = w_bytes + z_bytes + s_bytes + 768;
    const int copies = int(std::max<std::size_t>(2, (std::size_t(320) << 20) / per_copy + 1));
    DeviceBuffer<uint8_t> arena(per_copy * std::size_t(copies));
    cuda_check(cudaMemset(arena.get(), 0x3c, arena.size()), "memset");
    std::mt19937 rng(2);
    // y has the padding rows the fp8 GEMM writes (fp8_gemm_rows).
    DeviceBuffer<uint16_t> dx(random_bf16(rng, std::size_t(tokens) * k)), dy(std::size_t(fp8_gemm_rows(tokens)) * n);
    DeviceBuffer<uint16_t> scratch(path == Path::dequant_cublas ? std::size_t(n) * k : 1);
    const bool w8a8 = path == Path::fp8_w8a8 || path == Path::fp8_w8a8_channel;
    const Fp8Scaling w8a8_scaling = path == Path::fp8_w8a8 ? Fp8Scaling::block128 : Fp8Scaling::per_channel;
    DeviceBuffer<uint8_t> xq(w8a8 ? std::size_t(fp8_gemm_rows(tokens)) * k : 1);
    DeviceBuffer<float> xs(w8a8 ? std::size_t(k / 128) * fp8_act_scale_ld(tokens) : 1);
    DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(quant_mma_workspace_bytes(n, k, split_chunk), 0));
    cudaStream_t st;
    cuda_check(cudaStreamCreate(&st), "stream");
    cublas_ok(cublasSetStream(h, st));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int c = 0; c < copies; ++c) {
        uint8_t* base = arena.get() + per_copy * std::size_t(c);
        auto at = [](uint8_t* b) {
            return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(b) + 255) & ~uintptr_t(255));
        };
        uint8_t* w = at(base);
        uint8_t* z = at(w + w_bytes);
        uint8_t* sc = at(z + z_bytes);
        if (path == Path::bf16_cublas) {
            gemm(h, reinterpret_cast<const uint16_t*>(w), dx.get(), tokens, k, n, dy.get());
            continue;
        }
        QuantGemvParams q;
        q.format = f, q.x = dx.get(), q.x_row_stride = k, q.y = dy.get(), q.y_row_stride = n, q.n = n, q.k = k;
        q.group_size = kGroup, q.zero_plus_one = f == QuantFormat::gptq_int4, q.workspace = dws.get();
        q.qweight = reinterpret_cast<const int32_t*>(w), q.qzeros = reinterpret_cast<const int32_t*>(z);
        q.scales = reinterpret_cast<const uint16_t*>(sc), q.split_chunk = split_chunk;
        q.w_fp8 = w, q.w_scale = reinterpret_cast<const float*>(sc), q.fp8_scaling = Fp8Scaling::block128;
        q.mma_col_groups = col_groups;
        if (w8a8) {  // x quantized per site, as the runner does, then the GEMM
            Fp8GemmParams g;
            g.w_scaling = w8a8_scaling;
            g.w = w, g.w_scale = reinterpret_cast<const float*>(sc), g.xq = xq.get(), g.x_scale = xs.get();
            g.y = dy.get(), g.y_row_stride = n, g.n_tokens = tokens, g.n = n, g.k = k;
            if (!g_fp8_gemm->takes(g)) continue;  // no algorithm: an empty graph, time ~0
            cuda_check(fp8_quantize_rows(dx.get(), k, tokens, k, xq.get(), xs.get(), fp8_act_scale_ld(tokens),
                                         fp8_act_block_cols(w8a8_scaling, k), st),
                       "fp8_quantize_rows");
            cuda_check(g_fp8_gemm->run(g, st), "fp8 gemm");
            continue;
        }
        if (path == Path::dequant_cublas) {
            cuda_check(quant_dequantize(q, 0, n, scratch.get(), st), "quant_dequantize");
            gemm(h, scratch.get(), dx.get(), tokens, k, n, dy.get());
            continue;
        }
        for (int t0 = 0; t0 < tokens; t0 += kQuantMmaMaxTokens) {
            q.x = dx.get() + std::size_t(t0) * k, q.y = dy.get() + std::size_t(t0) * n;
            q.n_tokens = std::min(kQuantMmaMaxTokens, tokens - t0);
            cuda_check(quant_mma(q, st), "quant_mma");
        }
    }
    cuda_check(cudaStreamEndCapture(st, &graph), "end capture");
    cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    const double us = 1e3 * median_ms([&] { cuda_check(cudaGraphLaunch(exec, st), "graph launch"); }) / copies;
    cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(st);
    return us;
}

}  // namespace

int main(int argc, char** argv) {
    const bool fp8_only = argc > 1 && std::string(argv[1]) == "--fp8";  // the fp8 table alone
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n", prop.name, prop.multiProcessorCount,
                copy_bandwidth() / 1e9);
    for (QuantFormat f : {QuantFormat::awq_int4, QuantFormat::gptq_int4, QuantFormat::fp8_e4m3})
        for (int tokens : {5, 32}) check(f, 1024, 4096, tokens);
    cublasHandle_t h;
    cublas_ok(cublasCreate(&h));
    for (int tokens : {1, 8, 16, 32, 64}) {
        if (fp8_only) break;
        std::printf("\ntokens %d: us per call site (GB/s of stored int4 bytes)\n", tokens);
        double sum[6] = {};
        for (const Site& s : kSites) {
            const double bytes = double(s.n) * s.k / 2 + double(s.k / kGroup) * s.n * 2.5;
            const double t[6] = {time_site(Path::bf16_cublas, QuantFormat::awq_int4, s, tokens, 0, h),
                                 time_site(Path::dequant_cublas, QuantFormat::awq_int4, s, tokens, 0, h),
                                 time_site(Path::mma, QuantFormat::awq_int4, s, tokens, 0, h),
                                 time_site(Path::mma, QuantFormat::gptq_int4, s, tokens, 0, h),
                                 time_site(Path::dequant_cublas, QuantFormat::fp8_e4m3, s, tokens, 0, h),
                                 time_site(Path::mma, QuantFormat::fp8_e4m3, s, tokens, 0, h)};
            for (int i = 0; i < 6; ++i) sum[i] += t[i];
            std::printf(
                "%-8s %5dx%-5d | bf16 cuBLAS %7.1f | awq dequant+cuBLAS %7.1f | awq mma %6.1f (%4.0f GB/s) | "
                "gptq mma %6.1f (%4.0f GB/s) | fp8 dequant+cuBLAS %7.1f | fp8 mma %6.1f (%4.0f GB/s)\n",
                s.name, s.n, s.k, t[0], t[1], t[2], bytes / (t[2] * 1e-6) / 1e9, t[3], bytes / (t[3] * 1e-6) / 1e9,
                t[4], t[5], double(s.n) * s.k / (t[5] * 1e-6) / 1e9);
            std::fflush(stdout);
        }
        std::printf(
            "layer, x36: bf16 cuBLAS %.2f ms | awq dequant+cuBLAS %.2f ms | awq mma %.2f ms | gptq mma %.2f ms | "
            "fp8 dequant+cuBLAS %.2f ms | fp8 mma %.2f ms\n",
            36 * sum[0] * 1e-3, 36 * sum[1] * 1e-3, 36 * sum[2] * 1e-3, 36 * sum[3] * 1e-3, 36 * sum[4] * 1e-3,
            36 * sum[5] * 1e-3);
    }
    Fp8Gemm fp8_gemm;
    DeviceBuffer<uint8_t> lt_ws(std::size_t(32) << 20);
    if (fp8_gemm.init(lt_ws.get(), lt_ws.size())) {
        g_fp8_gemm = &fp8_gemm;
        std::printf(
            "\nfp8: us per call site; W8A8 = fp8_quantize_rows + cuBLASLt fp8 GEMM, 128x128-block weights "
            "(x per 128 columns) or per-channel weights (x per token)\n");
        for (int tokens : {1, 4, 8, 16, 32, 64, 128, 512, 2048}) {
            double sum[5] = {};
            for (const Site& s : kSites) {
                const double t[5] = {
                    time_site(Path::bf16_cublas, QuantFormat::fp8_e4m3, s, tokens, 0, h),
                    tokens <= kQuantMmaMaxTokens ? time_site(Path::mma, QuantFormat::fp8_e4m3, s, tokens, 0, h) : 0.0,
                    tokens <= 512 ? time_site(Path::dequant_cublas, QuantFormat::fp8_e4m3, s, tokens, 0, h) : 0.0,
                    time_site(Path::fp8_w8a8, QuantFormat::fp8_e4m3, s, tokens, 0, h),
                    time_site(Path::fp8_w8a8_channel, QuantFormat::fp8_e4m3, s, tokens, 0, h)};
                for (int i = 0; i < 5; ++i) sum[i] += t[i];
                std::printf(
                    "tokens %4d %-8s %5dx%-5d | bf16 cuBLAS %8.1f | fp8 mma %7.1f | fp8 dequant+cuBLAS %8.1f | "
                    "fp8 W8A8 %8.1f (%4.0f GB/s) | per-channel %8.1f\n",
                    tokens, s.name, s.n, s.k, t[0], t[1], t[2], t[3], double(s.n) * s.k / (t[3] * 1e-6) / 1e9, t[4]);
                std::fflush(stdout);
            }
            std::printf(
                "tokens %4d layer, x36: bf16 cuBLAS %.2f ms | fp8 mma %.2f ms | fp8 dequant+cuBLAS %.2f ms | "
                "fp8 W8A8 %.2f ms | per-channel %.2f ms\n",
                tokens, 36 * sum[0] * 1e-3, 36 * sum[1] * 1e-3, 36 * sum[2] * 1e-3, 36 * sum[3] * 1e-3,
                36 * sum[4] * 1e-3);
        }
    } else {
        std::printf("\nno fp8 GEMM on this GPU\n");
    }
    for (int tokens : {8, 16, 32}) {
        if (fp8_only) break;
        std::printf(
            "\nsweep, tokens %d, awq: us per call site by column groups per block and k rows per block "
            "(0 = default)\n",
            tokens);
        for (const Site& s : kSites)
            for (int cg : {1, 2, 4}) {
                std::printf("%-8s %5dx%-5d cg%d", s.name, s.n, s.k, cg);
                for (int chunk : {0, 128, 256, 512, 1024, 2048})
                    if (chunk <= s.k && chunk <= 65536 / (16 * ((tokens + 7) / 8)))
                        std::printf(" | %4d: %6.1f", chunk,
                                    time_site(Path::mma, QuantFormat::awq_int4, s, tokens, chunk, h, cg));
                std::printf("\n");
                std::fflush(stdout);
            }
    }
    cublasDestroy(h);
    return 0;
}
