// kernel_bench: paged decode attention (attention() and attention_decode()), tensor-core prefill attention and
// SGMV LoRA at Qwen3-8B / Llama-8B shapes on the GPU. Each case is checked against its C++ twin (or, when that is
// too slow, the other kernel) first, then timed with CUDA events (median of 50 after warm-up) and reported
// against its memory floor (bytes that must move / measured copy bandwidth) or, for prefill, as achieved
// TFLOP/s of the causal attention math.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "../tests/kernels/device_buffer.h"
#include "../tests/kernels/kernel_test_util.h"
#include "bench_timing.h"
#include "attention_plan.h"
#include "launchers.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

struct Attn {
    AttentionParams p;
    PagedBatch batch;
    std::vector<uint16_t> q, k, v;
};

void bench_attention(int batch_size, int ctx, double bw) {
    const int n_heads = 32, n_kv = 8, hd = 128, ps = 16;
    std::mt19937 rng(batch_size * 7 + ctx);
    std::vector<std::pair<int, int>> seqs(std::size_t(batch_size), {1, ctx});
    auto b = make_paged_batch(rng, seqs, ps);
    auto q = random_bf16(rng, std::size_t(b.n_tokens()) * n_heads * hd);
    auto kp = random_bf16(rng, std::size_t(b.n_pages) * ps * n_kv * hd), vp = random_bf16(rng, kp.size());
    DeviceBuffer<uint16_t> dq(q), dk(kp), dv(vp), dout(q.size());
    DeviceBuffer<int32_t> dqo(b.qo_indptr), dkvp(b.kv_indptr), dkvi(b.kv_indices), dlast(b.kv_last_page_len);
    AttentionPlan plan;
    plan_attention(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), b.n_seqs(), ps, n_heads / n_kv, 256, plan);
    DeviceBuffer<AttentionWorkItem> di(plan.items);
    DeviceBuffer<AttentionMergeGroup> dg(plan.groups);
    DeviceBuffer<float> ws(attention_workspace_bytes(plan.items.size(), n_kv, hd) / 4);
    AttentionParams p;
    p.q = dq.get(), p.q_row_stride = n_heads * hd, p.k_pages = dk.get(), p.v_pages = dv.get(), p.qo_indptr = dqo.get();
    p.kv_indptr = dkvp.get(), p.kv_indices = dkvi.get(), p.kv_last_page_len = dlast.get(), p.n_seqs = b.n_seqs();
    p.page_size = ps, p.n_heads = n_heads, p.n_kv_heads = n_kv, p.head_dim = hd, p.scale = 0.088f, p.out = dout.get();
    auto run = [&] { attention(p, di.get(), int(plan.items.size()), dg.get(), int(plan.groups.size()), ws.get(), nullptr); };
    if (batch_size == 1) {  // correctness before timing
        run();
        cuda_check(cudaDeviceSynchronize(), "attention");
        std::vector<uint16_t> ref_out(q.size());
        AttentionParams h = p;
        h.q = q.data(), h.k_pages = kp.data(), h.v_pages = vp.data(), h.qo_indptr = b.qo_indptr.data();
        h.kv_indptr = b.kv_indptr.data(), h.kv_indices = b.kv_indices.data(), h.kv_last_page_len = b.kv_last_page_len.data();
        h.out = ref_out.data();
        ref::attention(h);
        double err = rel_l2(to_f32(dout.download()), to_f32(ref_out));
        if (!(err < 1e-2)) std::printf("ATTENTION CHECK FAILED: rel err %g\n", err), std::exit(1);
    }
    float ms = median_ms(run);
    double bytes = 2.0 * batch_size * ctx * n_kv * hd * 2;  // K and V read once
    std::printf("attention decode  batch %3d ctx %5d  heads 32/8 hd 128: %8.1f us  %6.0f GB/s  floor %6.1f us (%3.0f%%)\n",
                batch_size, ctx, ms * 1e3, bytes / (ms * 1e-3) / 1e9, bytes / bw * 1e6, 100.0 * bytes / bw / (ms * 1e-3));
}

// Attention splits per row tile exactly as the decode graphs choose them (engine/runtime/cuda/cuda_graphs.cpp:
// about two waves of blocks, one split per 256 keys, at most 64, within a 4096-item workspace).
int graph_splits(int batch, int n_kv, int max_kv, int n_sms) {
    auto pow2_at_least = [](int v) {
        int p = 1;
        while (p < v) p *= 2;
        return p;
    };
    const int fill = pow2_at_least((n_sms + batch * n_kv - 1) / (batch * n_kv));
    const int per_keys = pow2_at_least((max_kv + 255) / 256);
    int splits = std::min(std::max(per_keys, std::min(fill, std::min(8, pow2_at_least((max_kv + 63) / 64)))), 64);
    while (splits > 1 && batch * splits > 4096) splits /= 2;
    return splits;
}

// attention() and attention_decode() on the same graph split plan, decode batch of batch_size x ctx keys.
// attention_decode is checked first: against the twin on small cases, against attention() on large ones.
void bench_decode(const char* model, int n_heads, int n_kv, int batch_size, int ctx, int n_sms, double bw) {
    const int hd = 128, ps = 16;
    std::mt19937 rng(batch_size * 7 + ctx + n_heads);
    std::vector<std::pair<int, int>> seqs(std::size_t(batch_size), {1, ctx});
    auto b = make_paged_batch(rng, seqs, ps);
    auto q = random_bf16(rng, std::size_t(b.n_tokens()) * n_heads * hd);
    auto kp = random_bf16(rng, std::size_t(b.n_pages) * ps * n_kv * hd), vp = random_bf16(rng, kp.size());
    DeviceBuffer<uint16_t> dq(q), dk(kp), dv(vp), dout(q.size()), dout2(q.size());
    DeviceBuffer<int32_t> dqo(b.qo_indptr), dkvp(b.kv_indptr), dkvi(b.kv_indices), dlast(b.kv_last_page_len);
    const int splits = graph_splits(batch_size, n_kv, ctx, n_sms);
    AttentionPlan plan;
    plan_attention_splits(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), b.n_seqs(), ps,
                          n_heads / n_kv, splits, plan);
    DeviceBuffer<AttentionWorkItem> di(plan.items);
    DeviceBuffer<AttentionMergeGroup> dg(plan.groups);
    DeviceBuffer<float> ws(attention_workspace_bytes(plan.items.size(), n_kv, hd) / 4);
    AttentionParams p;
    p.q = dq.get(), p.q_row_stride = n_heads * hd, p.k_pages = dk.get(), p.v_pages = dv.get(), p.qo_indptr = dqo.get();
    p.kv_indptr = dkvp.get(), p.kv_indices = dkvi.get(), p.kv_last_page_len = dlast.get(), p.n_seqs = b.n_seqs();
    p.page_size = ps, p.n_heads = n_heads, p.n_kv_heads = n_kv, p.head_dim = hd, p.scale = 0.088f, p.out = dout.get();
    AttentionParams p2 = p;
    p2.out = dout2.get();
    const int ni = int(plan.items.size()), ng = int(plan.groups.size());
    auto run_old = [&] { attention(p2, di.get(), ni, dg.get(), ng, ws.get(), nullptr); };
    auto run_new = [&] { cuda_check(attention_decode(p, di.get(), ni, dg.get(), ng, ws.get(), nullptr), "attention_decode"); };
    run_new();
    cuda_check(cudaDeviceSynchronize(), "attention_decode");
    std::vector<uint16_t> want(q.size());
    if (std::int64_t(batch_size) * ctx <= 8 * 512) {
        AttentionParams h = p;
        h.q = q.data(), h.k_pages = kp.data(), h.v_pages = vp.data(), h.qo_indptr = b.qo_indptr.data();
        h.kv_indptr = b.kv_indptr.data(), h.kv_indices = b.kv_indices.data(), h.kv_last_page_len = b.kv_last_page_len.data();
        h.out = want.data();
        ref::attention(h);
    } else {
        run_old();
        cuda_check(cudaDeviceSynchronize(), "attention");
        want = dout2.download();
    }
    double err = rel_l2(to_f32(dout.download()), to_f32(want));
    if (!(err < 1e-2)) std::printf("ATTENTION_DECODE CHECK FAILED: rel err %g\n", err), std::exit(1);
    const float ms_old = median_ms(run_old), ms_new = median_ms(run_new);
    const double bytes = 2.0 * batch_size * ctx * n_kv * hd * 2, floor_us = bytes / bw * 1e6;
    std::printf("decode %-10s batch %3d ctx %5d heads %d/%d hd 128 splits %2d: attention %8.1f us (%3.0f%%)  "
                "attention_decode %7.1f us (%3.0f%%)  floor %6.1f us\n",
                model, batch_size, ctx, n_heads, n_kv, splits, ms_old * 1e3, 100.0 * floor_us / (ms_old * 1e3),
                ms_new * 1e3, 100.0 * floor_us / (ms_new * 1e3), floor_us);
}

// One sequence of n_new prompt tokens over n_cached cached ones: the tensor-core prefill kernel beside the
// split kernel on the same input. Causal FLOPs = 4 * hd * n_heads * sum over rows of visible keys.
void bench_prefill(int n_new, int n_cached) {
    const int n_heads = 32, n_kv = 8, hd = 128, ps = 16, group = n_heads / n_kv;
    std::mt19937 rng(n_new * 3 + n_cached);
    auto b = make_paged_batch(rng, {{n_new, n_cached + n_new}}, ps);
    auto q = random_bf16(rng, std::size_t(n_new) * n_heads * hd);
    auto kp = random_bf16(rng, std::size_t(b.n_pages) * ps * n_kv * hd), vp = random_bf16(rng, kp.size());
    DeviceBuffer<uint16_t> dq(q), dk(kp), dv(vp), dout(q.size()), dout_split(q.size());
    DeviceBuffer<int32_t> dqo(b.qo_indptr), dkvp(b.kv_indptr), dkvi(b.kv_indices), dlast(b.kv_last_page_len);
    AttentionPlan plan, split_only;
    std::vector<PrefillTile> tiles;
    plan_attention_mixed(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), 1, ps, group, 256, 1, plan,
                         tiles);
    plan_attention(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), 1, ps, group, 256, split_only);
    DeviceBuffer<PrefillTile> dt(tiles);
    DeviceBuffer<AttentionWorkItem> di(split_only.items);
    DeviceBuffer<AttentionMergeGroup> dg(split_only.groups);
    DeviceBuffer<float> ws(attention_workspace_bytes(split_only.items.size(), n_kv, hd) / 4);
    AttentionParams p;
    p.q = dq.get(), p.q_row_stride = n_heads * hd, p.k_pages = dk.get(), p.v_pages = dv.get(), p.qo_indptr = dqo.get();
    p.kv_indptr = dkvp.get(), p.kv_indices = dkvi.get(), p.kv_last_page_len = dlast.get(), p.n_seqs = 1;
    p.page_size = ps, p.n_heads = n_heads, p.n_kv_heads = n_kv, p.head_dim = hd, p.scale = 0.088f, p.out = dout.get();
    AttentionParams ps_split = p;
    ps_split.out = dout_split.get();
    auto run_prefill = [&] {
        cuda_check(attention_prefill(p, dt.get(), int(tiles.size()), nullptr), "attention_prefill");
    };
    auto run_split = [&] {
        attention(ps_split, di.get(), int(split_only.items.size()), dg.get(), int(split_only.groups.size()), ws.get(),
                  nullptr);
    };
    run_prefill(), run_split();
    cuda_check(cudaDeviceSynchronize(), "attention");
    auto got = to_f32(dout.download());
    double err = rel_l2(got, to_f32(dout_split.download()));  // the two kernels must agree on every case
    if (n_new + n_cached <= 512) {                            // the f64 twin is too slow for the long cases
        std::vector<uint16_t> ref_out(q.size());
        AttentionParams h = p;
        h.q = q.data(), h.k_pages = kp.data(), h.v_pages = vp.data(), h.qo_indptr = b.qo_indptr.data();
        h.kv_indptr = b.kv_indptr.data(), h.kv_indices = b.kv_indices.data(),
        h.kv_last_page_len = b.kv_last_page_len.data();
        h.out = ref_out.data();
        ref::attention(h);
        err = std::max(err, rel_l2(got, to_f32(ref_out)));
    }
    if (!(err < 1e-2)) std::printf("PREFILL CHECK FAILED: rel err %g\n", err), std::exit(1);
    double visible = 0;
    for (int i = 0; i < n_new; ++i) visible += n_cached + i + 1;
    const double flops = 4.0 * hd * n_heads * visible;
    float ms_p = median_ms(run_prefill), ms_s = median_ms(run_split);
    std::printf(
        "attention prefill new %5d cached %5d heads 32/8 hd 128: tensor-core %8.1f us %6.1f TFLOP/s | split %8.1f us "
        "%6.1f TFLOP/s (%4.1fx)\n",
        n_new, n_cached, ms_p * 1e3, flops / (ms_p * 1e-3) / 1e12, ms_s * 1e3, flops / (ms_s * 1e-3) / 1e12,
        ms_s / ms_p);
}

void bench_sgmv(int n_tokens, int n_adapters, int rank, double bw) {
    const int in = 4096, max_rank = 64, n_slots = 8;
    const int outs[3] = {4096, 1024, 1024};
    std::mt19937 rng(n_tokens + n_adapters * 3 + rank);
    const int64_t slot_stride = int64_t(max_rank) * in;
    std::vector<int32_t> ranks(n_slots + 1, rank), seg_indptr{0}, seg_slot;
    ranks[0] = 0;
    std::vector<float> scales(n_slots + 1, 0.5f);
    for (int s = 0; s < n_adapters; ++s) {
        seg_indptr.push_back(int32_t(int64_t(n_tokens) * (s + 1) / n_adapters));
        seg_slot.push_back(1 + s % n_slots);
    }
    int max_seg = 0;
    for (int s = 0; s < n_adapters; ++s) max_seg = std::max(max_seg, seg_indptr[s + 1] - seg_indptr[s]);
    auto x = random_bf16(rng, std::size_t(n_tokens) * in), y = random_bf16(rng, std::size_t(n_tokens) * 6144);
    std::vector<uint16_t> a[3], bt[3];
    DeviceBuffer<uint16_t> dx(x), dy(y), da[3], dbt[3];
    DeviceBuffer<float> dxa(std::size_t(n_tokens) * 3 * max_rank), dsc(scales);
    DeviceBuffer<int32_t> drk(ranks), dsp(seg_indptr), dss(seg_slot);
    SgmvParams p;
    p.x = dx.get(), p.x_row_stride = in, p.in_features = in, p.xa = dxa.get(), p.y = dy.get(), p.y_row_stride = 6144;
    p.seg_indptr = dsp.get(), p.seg_slot = dss.get(), p.n_segs = n_adapters, p.max_seg_len = max_seg;
    p.max_rank = max_rank, p.slot_stride = slot_stride, p.n_slices = 3;
    int off = 0;
    for (int j = 0; j < 3; ++j) {
        a[j] = random_bf16(rng, n_slots * slot_stride), bt[j] = random_bf16(rng, n_slots * slot_stride);
        da[j].upload(a[j]), dbt[j].upload(bt[j]);
        p.slices[j] = {da[j].get(), dbt[j].get(), drk.get(), dsc.get(), off, outs[j]};
        off += outs[j];
    }
    auto run = [&] { sgmv_shrink(p, nullptr), sgmv_expand(p, nullptr); };
    float ms = median_ms(run);
    // Floor: each used adapter's A and B^T once, x read, y read + written.
    double bytes = double(std::min(n_adapters, n_slots)) * rank * (3.0 * in + 6144) * 2 + n_tokens * (in + 2.0 * 6144) * 2;
    std::printf("sgmv qkv (in 4096 -> 4096|1024|1024)  tokens %3d adapters %2d rank %2d: %7.1f us  floor %5.1f us (%3.0f%%)\n",
                n_tokens, n_adapters, rank, ms * 1e3, bytes / bw * 1e6, 100.0 * bytes / bw / (ms * 1e-3));
}

}  // namespace

int main() {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "device");
    double bw = copy_bandwidth();
    std::printf("%s, %d SMs; device copy %.0f GB/s (read + write)\n", prop.name, prop.multiProcessorCount, bw / 1e9);
    for (int bs : {1, 8, 32})
        for (int ctx : {512, 4096}) bench_attention(bs, ctx, bw);
    for (int bs : {1, 8, 32, 64})
        for (int ctx : {512, 4096}) bench_decode("qwen3-8b", 32, 8, bs, ctx, prop.multiProcessorCount, bw);
    bench_decode("qwen3-0.6b", 16, 8, 1, 512, prop.multiProcessorCount, bw);
    for (auto [n_new, n_cached] : {std::pair{512, 0}, {2048, 0}, {512, 1536}}) bench_prefill(n_new, n_cached);
    for (int rank : {16, 64})
        for (auto [n, ad] : {std::pair{1, 1}, {8, 8}, {32, 8}, {32, 1}}) bench_sgmv(n, ad, rank, bw);
    return 0;
}
