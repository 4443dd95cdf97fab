// decode_attention_bench: decode attention per layer as a decode step sees it, to choose the split plan.
// Each case (model shape, batch, context) keeps L copies of its KV pool, together over 160 MB so that a replay
// cannot serve them from the 50 MB L2 (in a real step the weights stream in between), and captures one CUDA
// graph of L attention_decode launches, one per copy, with programmatic dependent launch as the runner uses it.
// Timed: the median replay over L. Per split count (1 = one whole-sequence block per sequence and KV head): the
// fused merge (merge counters) with the Q·K layout and staging attention_decode picks (auto), the same without
// staging K/V in shared memory before the PDL wait (nostage), forced coalesced (co) and forced lane per key (lk)
// without staging, and the merge kernel with the coalesced layout. Every variant's output is checked against
// the C++ twin (small cases) or against the 1-split result first. The row the step planner would choose
// (decode_attention_splits) is marked *.
//
//   decode_attention_bench [--quick | --mha | --qwen2 | --hnd [BATCHES [CONTEXTS]]]
//   (--mha: Llama-7B shapes, by default at batch 32,64,128 and contexts 512,1024; comma-separated lists override.
//   --qwen2: Qwen2.5-7B shapes (28 / 4 heads), batch 8,32,128 at 544,1024 keys.
//   --hnd: Llama-7B, then the same blocks with each (sequence, KV head) a one-head sequence of 32 x batch, whose keys
//   lie 256 bytes apart in 4 KB pages as in a head-major (HND) pool, instead of 8 KB apart; the same for Qwen3-8B
//   (8 x batch sequences of one KV head and 4 query heads, keys 2 KB apart otherwise); default 128 x 544,1024.)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "attention_case.h"
#include "attention_internal.h"
#include "attention_plan.h"
#include "bench_args.h"
#include "device_buffer.h"
#include "kernel_test_util.h"
#include "ref/ref_kernels.h"
#include "runtime/cuda/step_plan.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

constexpr int kHeadDim = 128, kPageSize = 16;
constexpr std::size_t kStreamBytes = std::size_t(160) << 20;

struct Shape {
    const char* name;
    int n_heads, n_kv;
};

struct Variant {
    const char* name;
    bool fused;
    detail::DecodeQkLayout layout;
    detail::DecodeStaging staging;
};

using detail::DecodeQkLayout, detail::DecodeStaging;
constexpr Variant kVariants[] = {{"fused+auto", true, DecodeQkLayout::automatic, DecodeStaging::automatic},
                                 {"nostage", true, DecodeQkLayout::automatic, DecodeStaging::off},
                                 {"fused+co", true, DecodeQkLayout::coalesced, DecodeStaging::off},
                                 {"fused+lk", true, DecodeQkLayout::lane_per_key, DecodeStaging::off},
                                 {"merge+co", false, DecodeQkLayout::coalesced, DecodeStaging::off}};

// One case's device state: L pool copies (one page table: copy l is the pool at l * pool_elems), one q, one
// output.
struct SweepCase {
    int layers = 1;
    AttentionParams p;  // device pointers of copy 0
    DeviceBuffer<uint16_t> q, pool, out;
    DeviceBuffer<int32_t> qo, kv_indptr, kv_indices, last;
    std::size_t pool_elems = 0;  // one copy (K, then V)
};

double time_graph(const SweepCase& c, const Variant& v, const AttentionWorkItem* items, int n_items,
                  const AttentionMergeGroup* groups, int n_groups, float* ws, int32_t* counters) {
    cudaStream_t s;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    cudaGraph_t g;
    cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
    for (int l = 0; l < c.layers; ++l) {
        AttentionParams p = c.p;
        p.k_pages = c.pool.get() + std::size_t(l) * c.pool_elems;
        p.v_pages = p.k_pages + c.pool_elems / 2;
        p.merge_counters = v.fused ? counters : nullptr;
        cuda_check(detail::attention_decode_with(p, items, n_items, groups, n_groups, ws, v.layout, v.staging, s),
                   "attention_decode");
    }
    cuda_check(cudaStreamEndCapture(s, &g), "capture end");
    cudaGraphExec_t exec;
    cuda_check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, s);
    std::vector<float> t;
    for (int i = 0; i < 15; ++i) {
        cudaEventRecord(a, s);
        cudaGraphLaunch(exec, s);
        cudaEventRecord(b, s);
        cuda_check(cudaEventSynchronize(b), "replay");
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    cudaEventDestroy(a), cudaEventDestroy(b);
    cudaGraphExecDestroy(exec), cudaGraphDestroy(g), cudaStreamDestroy(s);
    std::sort(t.begin(), t.end());
    return 1e3 * t[t.size() / 2] / c.layers;  // us per launch
}

void sweep(const Shape& m, int batch, int ctx, int n_sms, bool quick) {
    std::mt19937 rng(batch * 131 + ctx + m.n_heads);
    const int group = m.n_heads / m.n_kv;
    const PagedBatch b =
        make_paged_batch(rng, std::vector<std::pair<int, int>>(std::size_t(batch), {1, ctx}), kPageSize);
    const std::size_t slot = std::size_t(m.n_kv) * kHeadDim, copy = 2 * std::size_t(b.n_pages) * kPageSize * slot;
    SweepCase c;
    c.pool_elems = copy;
    c.layers = int(std::clamp<std::size_t>(kStreamBytes / (copy * 2) + 1, 1, 36));
    // One random copy (its tail repeats a 16M-element pattern: filling GBs from mt19937 takes too long).
    std::vector<uint16_t> host = random_bf16(rng, std::min<std::size_t>(copy, std::size_t(1) << 24), -2.0f, 2.0f);
    host.resize(copy);
    for (std::size_t i = std::size_t(1) << 24; i < copy; ++i) host[i] = host[i & ((std::size_t(1) << 24) - 1)];
    c.pool.resize(copy * std::size_t(c.layers));
    for (int l = 0; l < c.layers; ++l)
        cuda_check(cudaMemcpy(c.pool.get() + std::size_t(l) * copy, host.data(), copy * 2, cudaMemcpyHostToDevice),
                   "pool");
    const auto q_host = random_bf16(rng, std::size_t(batch) * m.n_heads * kHeadDim, -2.0f, 2.0f);
    c.q.upload(q_host), c.out.resize(q_host.size());
    c.qo.upload(b.qo_indptr), c.kv_indptr.upload(b.kv_indptr), c.kv_indices.upload(b.kv_indices);
    c.last.upload(b.kv_last_page_len);
    std::vector<uint16_t> want(q_host.size());
    const bool twin = std::size_t(batch) * ctx <= 65536;
    if (twin) {  // the C++ twin over copy 0
        AttentionParams h = host_attention_params(b, q_host, m.n_heads * kHeadDim, host, host, m.n_heads, m.n_kv,
                                                  kHeadDim, 1.0f / std::sqrt(float(kHeadDim)), want.data());
        std::vector<uint16_t> k(host.begin(), host.begin() + long(copy / 2)),
            v(host.begin() + long(copy / 2), host.end());
        h.k_pages = k.data(), h.v_pages = v.data();
        ref::attention(h);
    }
    AttentionParams& p = c.p;
    p.q = c.q.get(), p.q_row_stride = m.n_heads * kHeadDim, p.qo_indptr = c.qo.get(), p.kv_indptr = c.kv_indptr.get();
    p.kv_indices = c.kv_indices.get(), p.kv_last_page_len = c.last.get(), p.n_seqs = batch;
    p.page_size = kPageSize, p.n_heads = m.n_heads, p.n_kv_heads = m.n_kv, p.head_dim = kHeadDim;
    p.scale = 1.0f / std::sqrt(float(kHeadDim)), p.out = c.out.get(), p.max_kv_len = ctx;
    p.k_pages = c.pool.get(), p.v_pages = p.k_pages + copy / 2;

    const int chosen = loradesk::runtime::cuda::decode_attention_splits(
        {batch, group, m.n_kv, ctx, n_sms, loradesk::runtime::cuda::kPlannedAttentionItems, true});
    std::printf(
        "%-10s batch %3d ctx %5d (%d copies, %.0f MB each; planner: %d splits; %.1f us reads the KV at 3 TB/s)\n",
        m.name, batch, ctx, c.layers, copy * 2 / 1e6, chosen, copy * 2 / 3e6);
    const std::size_t n_counters = attention_decode_counters(std::size_t(batch), m.n_kv);
    DeviceBuffer<int32_t> counters(std::vector<int32_t>(n_counters, 0));
    for (int splits : {1, 2, 4, 8, 16, 32, 64}) {
        if (batch * splits > loradesk::runtime::cuda::kPlannedAttentionItems) break;
        if (quick && splits != 1 && splits != chosen && splits != 8 && splits != 16) continue;
        AttentionPlan plan;
        plan_attention_splits(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), batch, kPageSize,
                              group, splits, plan);
        DeviceBuffer<AttentionWorkItem> items(plan.items);
        DeviceBuffer<AttentionMergeGroup> groups(plan.groups);
        DeviceBuffer<float> ws(attention_workspace_bytes(plan.items.size(), m.n_kv, kHeadDim) / 4);
        std::string line = "  splits " + std::to_string(splits) + (splits == chosen ? " *" : "  ");
        for (const Variant& v : kVariants) {
            if (splits == 1 && !v.fused) continue;  // one split writes the output itself either way
            // Check first: copy 0, NaN-poisoned output.
            cuda_check(cudaMemcpy(c.out.get(), std::vector<uint16_t>(q_host.size(), kNanBf16).data(), q_host.size() * 2,
                                  cudaMemcpyHostToDevice),
                       "poison");
            AttentionParams pc = p;
            pc.merge_counters = v.fused ? counters.get() : nullptr;
            cuda_check(detail::attention_decode_with(pc, items.get(), int(plan.items.size()), groups.get(),
                                                     int(plan.groups.size()), ws.get(), v.layout, v.staging, nullptr),
                       "attention_decode");
            cuda_check(cudaDeviceSynchronize(), "attention_decode");
            const auto got = c.out.download();
            if (!twin && splits == 1 && &v == kVariants) want = got;  // the reference for the large cases
            const double err = rel_l2(to_f32(got), to_f32(want));
            if (!(err < 1e-2)) {
                std::printf("CHECK FAILED: %s batch %d ctx %d splits %d %s: rel err %g\n", m.name, batch, ctx, splits,
                            v.name, err);
                std::exit(1);
            }
            const double us = time_graph(c, v, items.get(), int(plan.items.size()), groups.get(),
                                         int(plan.groups.size()), ws.get(), counters.get());
            char buf[64];
            std::snprintf(buf, sizeof buf, "  %s %6.1f", v.name, us);
            line += buf;
        }
        std::printf("%s  (us per layer)\n", line.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view arg = argc > 1 ? argv[1] : "";
    const bool quick = arg == "--quick";
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    std::printf(
        "%s, %d SMs. auto = attention_decode's own Q.K layout choice, co = coalesced Q.K, lk = lane per key; "
        "fused = merge counters, merge = merge kernel.\n",
        prop.name, prop.multiProcessorCount);
    if (arg == "--mha") {  // Llama-7B shapes (32 KV heads, one query row each), by default where KV dominates
        for (int batch : int_list("decode_attention_bench", argc, argv, 2, {32, 64, 128}))
            for (int ctx : int_list("decode_attention_bench", argc, argv, 3, {512, 1024}))
                sweep({"llama-7b", 32, 32}, batch, ctx, prop.multiProcessorCount, false);
        return 0;
    }
    if (arg == "--qwen2") {  // Qwen2.5-7B shapes: 7 query heads per KV head (the kernels' 8-row case)
        for (int batch : int_list("decode_attention_bench", argc, argv, 2, {8, 32, 128}))
            for (int ctx : int_list("decode_attention_bench", argc, argv, 3, {544, 1024}))
                sweep({"qwen2.5-7b", 28, 4}, batch, ctx, prop.multiProcessorCount, false);
        return 0;
    }
    if (arg == "--hnd") {  // the same per batch, then each (sequence, KV head) as a one-head sequence of its own
        for (int batch : int_list("decode_attention_bench", argc, argv, 2, {128}))
            for (int ctx : int_list("decode_attention_bench", argc, argv, 3, {544, 1024})) {
                sweep({"llama-7b", 32, 32}, batch, ctx, prop.multiProcessorCount, false);
                sweep({"llama-7b as HND", 1, 1}, 32 * batch, ctx, prop.multiProcessorCount, false);
                sweep({"qwen3-8b", 32, 8}, batch, ctx, prop.multiProcessorCount, false);
                sweep({"qwen3-8b as HND", 4, 1}, 8 * batch, ctx, prop.multiProcessorCount, false);
            }
        return 0;
    }
    const Shape shapes[] = {{"qwen3-8b", 32, 8}, {"qwen3-0.6b", 16, 8}};
    for (const Shape& m : shapes)
        for (int batch : {1, 2, 4, 8, 16, 32, 64})
            for (int ctx : {256, 512, 1024, 2048, 4096, 8192}) {
                if (quick && (ctx == 256 || ctx == 1024 || ctx == 4096 ||
                              (m.n_heads == 32 ? batch != 1 && batch != 8 && batch != 32 : batch != 1)))
                    continue;
                sweep(m, batch, ctx, prop.multiProcessorCount, quick);
            }
    return 0;
}
