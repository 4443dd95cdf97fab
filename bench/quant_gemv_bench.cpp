// quant_gemv_bench: the quantized GEMV (kernels/quant_gemv.cu) at Qwen3-8B projection shapes, 1 and 2 tokens,
// beside the bf16 skinny GEMM (kernels/gemv.cu) of the same run: AWQ int4, GPTQ int4 without and with
// act-order, fp8 with 128x128 block scales. Each format is first checked against its twin on the k/v shape
// with random data; timing then uses constant-filled weights (the kernels do not branch on values) in enough
// copies to defeat the 50 MB L2, run back to back in one CUDA graph (PDL on, as in a decode step). us = median per
// launch;
// GB/s = stored weight bytes (with zeros, scales, g_idx) / time; "x" = bf16 time / this time.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "bench_timing.h"
#include "device_buffer.h"
#include "kernel_test_util.h"
#include "launchers.h"
#include "quant_case.h"
#include "quant_gemv.h"
#include "ref/ref_quant.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

struct Shape {
    const char* name;
    int n, k, per_layer;  // per_layer: how many times a Qwen3-8B layer runs it
};

enum class Kind { bf16, awq, gptq, gptq_act, fp8 };
constexpr Kind kKinds[] = {Kind::bf16, Kind::awq, Kind::gptq, Kind::gptq_act, Kind::fp8};
const char* kind_name(Kind k) {
    switch (k) {
        case Kind::bf16:
            return "bf16";
        case Kind::awq:
            return "awq";
        case Kind::gptq:
            return "gptq";
        case Kind::gptq_act:
            return "gptq-act";
        case Kind::fp8:
            return "fp8-block";
    }
    return "?";
}

QuantFormat format_of(Kind k) {
    return k == Kind::awq ? QuantFormat::awq_int4 : k == Kind::fp8 ? QuantFormat::fp8_e4m3 : QuantFormat::gptq_int4;
}

// Random data through the kernel and its twin at one shape; a mismatch is reported loudly.
void check(Kind kind, int n, int k, int tokens) {
    QuantCase c(format_of(kind), n, k, 128, kind == Kind::gptq_act, kind != Kind::awq, Fp8Scaling::block128, 11u);
    std::mt19937 rng(5);
    auto x = random_bf16(rng, std::size_t(tokens) * k);
    std::vector<uint16_t> want(std::size_t(tokens) * n);
    ref::quant_gemv(c.params(x.data(), k, want.data(), n, tokens, c.qweight.data(), c.qzeros.data(), c.s16.data(),
                             c.g_idx.data(), c.w8.data(), c.w_scale.data(), nullptr));
    auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
    DeviceBuffer<uint16_t> dx(x), dy(want.size()), ds(nonempty(c.s16));
    DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros)), dg(nonempty(c.g_idx));
    DeviceBuffer<uint8_t> dw8(nonempty(c.w8)), dws(std::vector<uint8_t>(quant_gemv_workspace_bytes(n, k, 128), 0));
    DeviceBuffer<float> dsc(nonempty(c.w_scale));
    const QuantGemvParams p = c.params(dx.get(), k, dy.get(), n, tokens, dqw.get(), dqz.get(), ds.get(), dg.get(),
                                       dw8.get(), dsc.get(), dws.get());
    cuda_check(quant_gemv(p, nullptr), "quant_gemv");
    cuda_check(cudaDeviceSynchronize(), "quant_gemv");
    const double err = rel_l2(to_f32(dy.download()), to_f32(want));
    std::printf("check %-9s %dx%d tokens %d: rel l2 %.2e\n", kind_name(kind), n, k, tokens, err);
    if (!(err < 4e-3)) std::printf("QUANT GEMV CHECK FAILED (timings below are of a wrong kernel)\n");
}

// One format at one shape: copies of the stored tensors laid out one after another (256-byte aligned).
struct Timed {
    double us = 0, bytes = 0;
};

std::size_t align256(std::size_t b) { return (b + 255) & ~std::size_t(255); }

Timed time_kind(Kind kind, const Shape& s, int tokens, int chunk = 0) {
    const int n = s.n, k = s.k, G = 128, groups = k / G;
    std::size_t sizes[4] = {};  // bytes of: weights, zeros, scales, g_idx
    if (kind == Kind::bf16) sizes[0] = std::size_t(n) * k * 2;
    if (kind == Kind::fp8) sizes[0] = std::size_t(n) * k, sizes[2] = std::size_t((n + 127) / 128) * (k / 128) * 4;
    if (kind == Kind::awq || kind == Kind::gptq || kind == Kind::gptq_act)
        sizes[0] = std::size_t(n) * k / 2, sizes[1] = std::size_t(groups) * n / 2,
        sizes[2] = std::size_t(groups) * n * 2;
    if (kind == Kind::gptq_act) sizes[3] = std::size_t(k) * 4;
    std::size_t per_copy = 0;
    for (std::size_t b : sizes) per_copy += align256(b);
    const int copies = int(std::max<std::size_t>(2, (std::size_t(320) << 20) / per_copy + 1));
    DeviceBuffer<uint8_t> arena(per_copy * copies);
    cuda_check(cudaMemset(arena.get(), 0x3c, arena.size()), "memset");  // bf16 ~0.0115, fp16 1.06, fp8 1.5
    if (kind == Kind::gptq_act) {  // g_idx must name real groups: a random permutation's k / G
        std::vector<int32_t> perm(std::size_t(k), 0);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), std::mt19937(1));
        for (auto& g : perm) g /= G;
        for (int c = 0; c < copies; ++c)
            cuda_check(
                cudaMemcpy(arena.get() + per_copy * c + align256(sizes[0]) + align256(sizes[1]) + align256(sizes[2]),
                           perm.data(), sizes[3], cudaMemcpyHostToDevice),
                "g_idx");
    }
    std::mt19937 rng(2);
    DeviceBuffer<uint16_t> dx(random_bf16(rng, std::size_t(tokens) * k)), dy(std::size_t(tokens) * n);
    DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(quant_gemv_workspace_bytes(n, k, 128), 0));
    std::vector<QuantGemvParams> qp(static_cast<std::size_t>(copies));
    std::vector<GemvParams> gp(static_cast<std::size_t>(copies));
    for (int c = 0; c < copies; ++c) {
        uint8_t* base = arena.get() + per_copy * c;
        uint8_t* parts[4] = {base, base + align256(sizes[0]), base + align256(sizes[0]) + align256(sizes[1]),
                             base + align256(sizes[0]) + align256(sizes[1]) + align256(sizes[2])};
        GemvParams& g = gp[std::size_t(c)];
        g.w = reinterpret_cast<const uint16_t*>(parts[0]), g.x = dx.get(), g.x_row_stride = k, g.n_tokens = tokens;
        g.in = k, g.out_rows = n, g.y = dy.get(), g.y_row_stride = n;
        QuantGemvParams& q = qp[std::size_t(c)];
        q.format = format_of(kind), q.x = dx.get(), q.x_row_stride = k, q.y = dy.get(), q.y_row_stride = n;
        q.n_tokens = tokens, q.n = n, q.k = k, q.group_size = G, q.zero_plus_one = true, q.workspace = dws.get();
        q.split_chunk = chunk;
        q.qweight = reinterpret_cast<const int32_t*>(parts[0]), q.qzeros = reinterpret_cast<const int32_t*>(parts[1]);
        q.scales = reinterpret_cast<const uint16_t*>(parts[2]);
        q.g_idx = kind == Kind::gptq_act ? reinterpret_cast<const int32_t*>(parts[3]) : nullptr;
        q.w_fp8 = parts[0], q.w_scale = reinterpret_cast<const float*>(parts[2]), q.fp8_scaling = Fp8Scaling::block128;
    }
    // All copies' launches in one CUDA graph, as a decode step runs them: no host launch cost per kernel.
    cudaStream_t st;
    cuda_check(cudaStreamCreate(&st), "stream");
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int c = 0; c < copies; ++c) {
        if (kind == Kind::bf16)
            cuda_check(gemv(gp[std::size_t(c)], st), "gemv");
        else
            cuda_check(quant_gemv(qp[std::size_t(c)], st), "quant_gemv");
    }
    cuda_check(cudaStreamEndCapture(st, &graph), "end capture");
    cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    auto launch = [&] { cuda_check(cudaGraphLaunch(exec, st), "graph launch"); };
    Timed t;
    t.us = 1e3 * median_ms(launch) / copies;
    t.bytes = double(sizes[0] + sizes[1] + sizes[2] + sizes[3]);
    cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(st);
    return t;
}

}  // namespace

int main() {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    const double bw = copy_bandwidth();
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n", prop.name, prop.multiProcessorCount, bw / 1e9);
    for (Kind kind : {Kind::awq, Kind::gptq, Kind::gptq_act, Kind::fp8})
        for (int tokens : {1, 2}) check(kind, 1024, 4096, tokens);
    const Shape shapes[] = {{"q", 4096, 4096, 1},
                            {"k/v", 1024, 4096, 2},
                            {"o", 4096, 4096, 1},
                            {"gate/up", 12288, 4096, 2},
                            {"down", 4096, 12288, 1}};
    for (int tokens : {1, 2}) {
        double layer_us[5] = {};
        std::printf("\ntokens %d: us per projection, GB/s of stored weight bytes, speed-up vs bf16\n", tokens);
        for (const Shape& s : shapes) {
            std::printf("%-8s %5dx%-5d", s.name, s.n, s.k);
            double bf16_us = 0;
            for (int i = 0; i < 5; ++i) {
                const Timed t = time_kind(kKinds[i], s, tokens);
                if (i == 0) bf16_us = t.us;
                layer_us[i] += t.us * s.per_layer;
                std::printf(" | %s %6.2f us %5.0f GB/s %4.2fx", kind_name(kKinds[i]), t.us,
                            t.bytes / (t.us * 1e-6) / 1e9, bf16_us / t.us);
            }
            std::printf("\n");
            std::fflush(stdout);
        }
        std::printf("layer (q + 2 k/v + o + 2 gate/up + down), x36 layers:");
        for (int i = 0; i < 5; ++i)
            std::printf(" | %s %6.1f us %5.2f ms %4.2fx", kind_name(kKinds[i]), layer_us[i], 36 * layer_us[i] * 1e-3,
                        layer_us[0] / layer_us[i]);
        std::printf("\n");
    }
    // Split-K sweep of the int4 kernels: k rows per block (0 = the launcher's choice).
    for (int tokens : {1, 2}) {
        std::printf("\nsplit-K sweep, tokens %d: us per projection by k rows per block\n", tokens);
        for (const Shape& s : shapes)
            for (Kind kind : {Kind::awq, Kind::gptq, Kind::gptq_act}) {
                std::printf("%-8s %5dx%-5d %-9s", s.name, s.n, s.k, kind_name(kind));
                for (int chunk : {0, 128, 256, 512, 1024})
                    std::printf(" | %4d: %6.2f", chunk, time_kind(kind, s, tokens, chunk).us);
                std::printf("\n");
                std::fflush(stdout);
            }
    }
    return 0;
}
