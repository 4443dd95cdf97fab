// The CUDA kernels (attention, norms, RoPE, element-wise, argmax; the SGMV ones in tst_sgmv_cuda) against their C++
// twins on identical random inputs over odd shapes (1, 3, 7, 19, 733), outputs poisoned with NaN first so unwritten
// elements fail. Tolerances: bf16 outputs rel-L2 1e-2, f32 outputs 1e-5. Label cuda: needs a GPU.
#include <QtTest>
#include <cmath>
#include <random>
#include <string_view>

#include "attention_case.h"
#include "attention_internal.h"
#include "attention_plan.h"
#include "device_buffer.h"
#include "kernel_test_util.h"
#include "launchers.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {
constexpr double kBf16Tol = 1e-2;

// Per-sequence comparison of an attention output [n_tokens, n_heads * hd]: for every sequence whose rel-L2
// error reaches tol (or that holds a NaN), its shape, the worst (token, head) and its max abs difference.
QString attention_mismatch(const std::vector<uint16_t>& got, const std::vector<uint16_t>& expect, const PagedBatch& b,
                           int n_heads, int hd, double tol) {
    QString report;
    const std::size_t row = std::size_t(n_heads) * hd;
    for (int s = 0; s < b.n_seqs(); ++s) {
        const std::size_t lo = std::size_t(b.qo_indptr[s]) * row, hi = std::size_t(b.qo_indptr[s + 1]) * row;
        std::vector<uint16_t> gs(got.begin() + lo, got.begin() + hi), es(expect.begin() + lo, expect.begin() + hi);
        double err = rel_l2(to_f32(gs), to_f32(es));
        if (err < tol) continue;
        double worst = -1;
        int worst_tok = 0, worst_head = 0;
        for (std::size_t t = 0; t < gs.size() / row; ++t)
            for (int h = 0; h < n_heads; ++h) {
                std::vector<uint16_t> gh(gs.begin() + t * row + h * hd, gs.begin() + t * row + (h + 1) * hd);
                std::vector<uint16_t> eh(es.begin() + t * row + h * hd, es.begin() + t * row + (h + 1) * hd);
                double d = max_abs_diff(to_f32(gh), to_f32(eh));
                if (d > worst) worst = d, worst_tok = int(t), worst_head = h;
            }
        int pages = b.kv_indptr[s + 1] - b.kv_indptr[s];
        report += QString("seq %1 (n_q %2, kv_len %3): rel err %4, worst token %5 head %6 max abs diff %7; ")
                      .arg(s)
                      .arg(b.qo_indptr[s + 1] - b.qo_indptr[s])
                      .arg((pages - 1) * b.page_size + b.kv_last_page_len[s])
                      .arg(err)
                      .arg(worst_tok)
                      .arg(worst_head)
                      .arg(worst);
    }
    return report;
}

}  // namespace

class TstKernelsCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void embedding_and_rmsnorm_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("hidden");
        for (int n : {1, 3, 19})
            // 7, 733: one value a thread; 1024 / 4096: one 16-byte chunk a thread; 4104 / 8192: two (4104: the
            // last thread has one); 9000: past the 8-column kernel's 1,024 chunks and the 8 values per thread the
            // one-value kernel keeps in registers.
            for (int h : {7, 733, 1024, 4096, 4104, 8192, 9000})
                QTest::newRow(qPrintable(QString("%1x%2").arg(n).arg(h))) << n << h;
    }
    void embedding_and_rmsnorm() {
        QFETCH(int, n);
        QFETCH(int, hidden);
        std::mt19937 rng(n * 7919 + hidden);
        const int vocab = 37;
        auto table = random_bf16(rng, std::size_t(vocab) * hidden);
        std::vector<int32_t> ids(n);
        for (int i = 0; i < n; ++i) ids[i] = i == 1 ? vocab + 5 : int(rng() % vocab);  // one bad id -> zeros
        std::vector<float> emb(std::size_t(n) * hidden);
        ref::embedding_gather(table.data(), ids.data(), n, hidden, vocab, emb.data());
        DeviceBuffer<uint16_t> d_table(table);
        DeviceBuffer<int32_t> d_ids(ids);
        DeviceBuffer<float> d_res(std::vector<float>(emb.size(), NAN));
        sync_check(embedding_gather(d_table.get(), d_ids.get(), n, hidden, vocab, d_res.get(), nullptr));
        QCOMPARE(max_abs_diff(d_res.download(), emb), 0.0);

        auto x = random_bf16(rng, emb.size());
        auto w = random_bf16(rng, hidden, 0.5f, 1.5f);
        std::vector<uint16_t> out(emb.size());
        std::vector<int32_t> rows{n - 1};
        if (n > 2) rows.push_back(1);
        const auto delta = random_f32(rng, emb.size(), -0.5f, 0.5f);  // a pending LoRA delta on x
        for (int run = 0; run < 5; ++run) {  // run 4: no x (the first layer's norm of the embeddings)
            const bool gather = run & 1, with_delta = run & 2, no_x = run == 4;
            auto res = emb;
            int n_rows = gather ? int(rows.size()) : n;
            const int32_t* r = gather ? rows.data() : nullptr;
            out.resize(std::size_t(n_rows) * hidden);
            ref::add_rmsnorm(no_x ? nullptr : x.data(), with_delta ? delta.data() : nullptr, res.data(), w.data(), r,
                             n_rows, hidden, 1e-6f, out.data());
            d_res.upload(emb);
            DeviceBuffer<uint16_t> d_x(x), d_w(w), d_out(std::vector<uint16_t>(std::size_t(n_rows) * hidden, kNanBf16));
            DeviceBuffer<int32_t> d_rows(rows);
            DeviceBuffer<float> d_delta(delta);
            sync_check(add_rmsnorm(no_x ? nullptr : d_x.get(), with_delta ? d_delta.get() : nullptr, d_res.get(),
                                   d_w.get(), gather ? d_rows.get() : nullptr, n_rows, hidden, 1e-6f, d_out.get(),
                                   nullptr));
            QVERIFY(rel_l2(d_res.download(), res) < 1e-6);
            double err = rel_l2(to_f32(d_out.download()), to_f32(out));
            QVERIFY2(err < kBf16Tol, qPrintable(QString("rmsnorm rel err %1").arg(err)));
        }
    }

    void rope_kv_data() {
        QTest::addColumn<int>("n_heads");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::addColumn<bool>("qk_norm");
        QTest::addColumn<bool>("lora_delta");
        QTest::newRow("llama hd128") << 8 << 2 << 128 << false << false;
        QTest::newRow("qwen3 hd128 norm") << 16 << 8 << 128 << true << false;
        QTest::newRow("qwen3 hd128 norm, LoRA delta") << 16 << 8 << 128 << true << true;
        QTest::newRow("hd64") << 7 << 1 << 64 << false << false;
        QTest::newRow("hd256 norm") << 3 << 3 << 256 << true << false;
        QTest::newRow("hd6 odd") << 3 << 1 << 6 << true << false;
        QTest::newRow("hd6 odd, LoRA delta") << 3 << 1 << 6 << true << true;
    }
    void rope_kv() {
        QFETCH(int, n_heads);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        QFETCH(bool, qk_norm);
        QFETCH(bool, lora_delta);
        std::mt19937 rng(n_heads * 13 + hd);
        auto batch = make_paged_batch(rng, {{7, 7}, {1, 733}, {19, 40}, {3, 3000}}, 16);
        const int n = batch.n_tokens(), stride = (n_heads + 2 * n_kv) * hd + 8;
        auto qkv = random_bf16(rng, std::size_t(n) * stride, -3.0f, 3.0f);
        const auto delta = random_f32(rng, qkv.size(), -0.5f, 0.5f);
        DeviceBuffer<float> d_delta(delta);
        auto qn = random_bf16(rng, hd, 0.5f, 1.5f), kn = random_bf16(rng, hd, 0.5f, 1.5f);
        ref::RopeScalingSpec l3{RopeKind::llama3, 8.0f, 1.0f, 4.0f, 8192};
        auto inv_freq = ref::rope_inv_freq(hd, 500000.0f, l3);
        std::vector<uint16_t> pages(std::size_t(batch.n_pages) * 16 * n_kv * hd, kNanBf16);
        DeviceBuffer<uint16_t> d_qkv(qkv), d_k(pages), d_v(pages), d_qn(qn), d_kn(kn);
        DeviceBuffer<int32_t> d_pos(batch.positions), d_slots(batch.kv_slots);
        DeviceBuffer<float> d_freq(inv_freq);
        auto k_pages = pages, v_pages = pages;
        RopeKvParams p;
        p.qkv = qkv.data(), p.qkv_row_stride = stride, p.n_tokens = n, p.n_heads = n_heads, p.n_kv_heads = n_kv;
        p.head_dim = hd, p.positions = batch.positions.data(), p.kv_slots = batch.kv_slots.data();
        p.inv_freq = inv_freq.data(), p.q_norm = qk_norm ? qn.data() : nullptr,
        p.k_norm = qk_norm ? kn.data() : nullptr;
        p.k_pages = k_pages.data(), p.v_pages = v_pages.data();
        RopeKvParams d = p;
        d.qkv = d_qkv.get(), d.positions = d_pos.get(), d.kv_slots = d_slots.get(), d.inv_freq = d_freq.get();
        d.q_norm = qk_norm ? d_qn.get() : nullptr, d.k_norm = qk_norm ? d_kn.get() : nullptr;
        d.k_pages = d_k.get(), d.v_pages = d_v.get();
        if (lora_delta) p.qkv_delta = delta.data(), d.qkv_delta = d_delta.get();
        ref::rope_kv_write(p);
        sync_check(rope_kv_write(d, nullptr));
        // Compare only the q part of qkv (k, v stay as they were in qkv) and the written page slots.
        auto got_qkv = d_qkv.download();
        QVERIFY(rel_l2(to_f32(got_qkv), to_f32(qkv)) < kBf16Tol);
        auto got_k = d_k.download(), got_v = d_v.download();
        std::vector<float> gk, ek, gv, ev;
        for (int t = 0; t < n; ++t)
            for (int e = 0; e < n_kv * hd; ++e) {
                std::size_t i = std::size_t(batch.kv_slots[t]) * n_kv * hd + e;
                gk.push_back(ref::bf16_to_f32(got_k[i])), ek.push_back(ref::bf16_to_f32(k_pages[i]));
                gv.push_back(ref::bf16_to_f32(got_v[i])), ev.push_back(ref::bf16_to_f32(v_pages[i]));
            }
        QVERIFY(rel_l2(gk, ek) < kBf16Tol);
        QCOMPARE(max_abs_diff(gv, ev), 0.0);
    }

    void attention_data() {
        QTest::addColumn<int>("n_heads");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::addColumn<int>("chunk");
        QTest::newRow("decode gqa hd128 split") << 32 << 8 << 128 << 64;
        QTest::newRow("prefill mha hd64") << 7 << 7 << 64 << 512;
        QTest::newRow("mqa hd256 split") << 3 << 1 << 256 << 96;
        QTest::newRow("odd hd19") << 4 << 2 << 19 << 32;
    }
    void attention() {
        QFETCH(int, n_heads);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        QFETCH(int, chunk);
        std::mt19937 rng(n_heads * 101 + hd + chunk);
        // decode rows (1 new token), prefill with and without a cached prefix, one long context.
        auto batch = make_paged_batch(rng, {{1, 1}, {1, 733}, {19, 19}, {7, 40}, {3, 1500}, {1, 7}}, 16);
        const int n = batch.n_tokens(), q_stride = n_heads * hd + 3;
        auto q = random_bf16(rng, std::size_t(n) * q_stride, -2.0f, 2.0f);
        auto k_pages = random_bf16(rng, std::size_t(batch.n_pages) * 16 * n_kv * hd, -2.0f, 2.0f);
        auto v_pages = random_bf16(rng, k_pages.size());
        std::vector<uint16_t> out(std::size_t(n) * n_heads * hd);
        const AttentionParams p = host_attention_params(batch, q, q_stride, k_pages, v_pages, n_heads, n_kv, hd,
                                                        1.0f / std::sqrt(float(hd)), out.data());
        ref::attention(p);
        AttentionPlan plan;
        plan_attention(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(), p.n_seqs, 16,
                       n_heads / n_kv, chunk, plan);
        DeviceAttention dev(p, batch, q, k_pages, v_pages);
        DeviceBuffer<AttentionWorkItem> d_items(plan.items);
        DeviceBuffer<AttentionMergeGroup> d_groups(plan.groups);
        DeviceBuffer<float> d_ws(attention_workspace_bytes(plan.items.size(), n_kv, hd) / sizeof(float));
        const AttentionParams& d = dev.p;
        sync_check(loradesk::kernels::attention(d, d_items.get(), int(plan.items.size()), d_groups.get(),
                                                int(plan.groups.size()), d_ws.get(), nullptr));
        double err = rel_l2(to_f32(dev.out.download()), to_f32(out));
        QVERIFY2(err < kBf16Tol,
                 qPrintable(QString("attention rel err %1 (%2 items)").arg(err).arg(plan.items.size())));
    }

    // attention_decode vs the twin: one decode batch per row holding every context length (1, 7, 16, 17, 733,
    // 1500, 4100 keys), both planners (chunked and fixed splits, incl. empty trailing items), outputs and
    // workspace NaN-poisoned so an unwritten partial or output fails. planner > 0: plan_attention chunk;
    // planner < 0: plan_attention_splits with -planner splits.
    void attention_decode_data() {
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::addColumn<int>("page_size");
        QTest::addColumn<int>("planner");
        QTest::addColumn<bool>("prefill");
        const int planners[] = {64, 256, -1, -3, -8, -64};
        int i = 0;
        for (int hd : {64, 128, 256})
            for (int group : {1, 2, 4, 8, 16}) {
                const int planner = planners[i % 6], ps = i % 2 ? 5 : 16, n_kv = group == 16 ? 1 : 2 + i % 2;
                ++i;
                QTest::newRow(qPrintable(
                    QString("hd%1 g%2 kv%3 page%4 %5")
                        .arg(hd)
                        .arg(group)
                        .arg(n_kv)
                        .arg(ps)
                        .arg(planner > 0 ? QString("chunk%1").arg(planner) : QString("splits%1").arg(-planner))))
                    << group << n_kv << hd << ps << planner << false;
            }
        for (int planner : planners)  // Qwen3-8B shape through every planner
            QTest::newRow(qPrintable(QString("qwen3-8b page16 planner%1").arg(planner)))
                << 4 << 8 << 128 << 16 << planner << false;
        QTest::newRow("group 3 (padded rows) page5 splits8") << 3 << 2 << 128 << 5 << -8 << false;
        QTest::newRow("group 7 hd64 chunk64") << 7 << 1 << 64 << 16 << 64 << false;
        // 5-8 rows past one wave: the tensor-core walk with the lane-per-key kernel's layout (Qwen2-7B: 28 / 4 heads).
        QTest::newRow("group 7 hd128 page5 chunk64 (tensor-core walk)") << 7 << 4 << 128 << 5 << 64 << false;
        QTest::newRow("group 8 hd128 splits8 (tensor-core walk)") << 8 << 3 << 128 << 16 << -8 << false;
        QTest::newRow("group 12 hd256 (two passes)") << 12 << 1 << 256 << 16 << -3 << false;
        QTest::newRow("not decode: prefill mix still right") << 4 << 2 << 128 << 16 << 64 << true;
    }
    void attention_decode() {
        QFETCH(int, group);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        QFETCH(int, page_size);
        QFETCH(int, planner);
        QFETCH(bool, prefill);
        const int n_heads = group * n_kv;
        std::mt19937 rng(group * 1009 + n_kv * 101 + hd + page_size * 7 + planner * 13 + prefill);
        std::vector<std::pair<int, int>> seqs;
        for (int ctx : {1, 7, 16, 17, 733, 1500, 4100}) seqs.push_back({1, ctx});
        if (prefill) seqs = {{1, 1}, {19, 19}, {7, 40}, {3, 1500}, {1, 7}};
        auto batch = make_paged_batch(rng, seqs, page_size);
        const int n = batch.n_tokens(), q_stride = n_heads * hd + 3;
        auto q = random_bf16(rng, std::size_t(n) * q_stride, -2.0f, 2.0f);
        auto k_pages = random_bf16(rng, std::size_t(batch.n_pages) * page_size * n_kv * hd, -2.0f, 2.0f);
        auto v_pages = random_bf16(rng, k_pages.size());
        std::vector<uint16_t> out(std::size_t(n) * n_heads * hd);
        const AttentionParams p = host_attention_params(batch, q, q_stride, k_pages, v_pages, n_heads, n_kv, hd,
                                                        1.0f / std::sqrt(float(hd)), out.data());
        ref::attention(p);
        AttentionPlan plan;
        if (planner > 0)
            plan_attention(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(), p.n_seqs,
                           page_size, group, planner, plan);
        else
            plan_attention_splits(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(),
                                  p.n_seqs, page_size, group, -planner, plan);
        int n_empty = 0;
        for (const auto& it : plan.items) n_empty += it.kv_begin == it.kv_end;
        DeviceAttention dev(p, batch, q, k_pages, v_pages);
        DeviceBuffer<AttentionWorkItem> d_items(plan.items);
        DeviceBuffer<AttentionMergeGroup> d_groups(plan.groups);
        DeviceBuffer<float> d_ws(std::vector<float>(attention_workspace_bytes(plan.items.size(), n_kv, hd) / 4, NAN));
        AttentionParams d = dev.p;
        QVERIFY(attention_decode_supported(d));
        // Four launches on one NaN-poisoned output each: the merge kernel, then the fused merge twice (its
        // counters must be back at zero after each launch, or the second launch would merge too early), then
        // without staging K/V in shared memory (attention_decode stages where it costs no extra wave: the small
        // grids here, head_dim 128 with up to 4 rows; this launch covers the global-memory walk there).
        DeviceBuffer<int32_t> counters(std::vector<int32_t>(attention_decode_counters(plan.groups.size(), n_kv), 0));
        for (const char* mode : {"merge kernel", "fused merge", "fused merge again", "fused merge, no staging"}) {
            d.merge_counters = mode[0] == 'f' ? counters.get() : nullptr;
            dev.out.upload(std::vector<uint16_t>(out.size(), kNanBf16));
            if (std::string_view(mode).ends_with("no staging"))
                sync_check(loradesk::kernels::detail::attention_decode_with(
                    d, d_items.get(), int(plan.items.size()), d_groups.get(), int(plan.groups.size()), d_ws.get(),
                    loradesk::kernels::detail::DecodeQkLayout::automatic, loradesk::kernels::detail::DecodeStaging::off,
                    nullptr));
            else
                sync_check(loradesk::kernels::attention_decode(d, d_items.get(), int(plan.items.size()), d_groups.get(),
                                                               int(plan.groups.size()), d_ws.get(), nullptr));
            for (int32_t c : counters.download()) QCOMPARE(c, 0);
            check_decode_output(mode, dev.out.download(), out, batch, seqs, plan, n_heads, hd, n_empty);
            if (QTest::currentTestFailed()) return;
        }
    }

    static void check_decode_output(const char* mode, const std::vector<uint16_t>& got_bf16,
                                    const std::vector<uint16_t>& out, const PagedBatch& batch,
                                    const std::vector<std::pair<int, int>>& seqs, const AttentionPlan& plan,
                                    int n_heads, int hd, int n_empty) {
        const int n = batch.n_tokens();
        const auto got = to_f32(got_bf16), want = to_f32(out);
        // Worst (token, head) row by max abs error, so a failure names the sequence and head that differ.
        double worst = -1;
        int worst_t = -1, worst_h = -1;
        for (int t = 0; t < n; ++t)
            for (int h = 0; h < n_heads; ++h) {
                const std::size_t o = (std::size_t(t) * n_heads + h) * hd;
                std::vector<float> g(got.begin() + o, got.begin() + o + hd), w(want.begin() + o, want.begin() + o + hd);
                const double e = max_abs_diff(g, w);
                if (e > worst) worst = e, worst_t = t, worst_h = h;
            }
        const double err = rel_l2(got, want);
        int seq = 0;
        while (seq + 1 < batch.n_seqs() && batch.qo_indptr[seq + 1] <= worst_t) ++seq;
        QVERIFY2(err < kBf16Tol && worst < 0.05,
                 qPrintable(QString("%10: rel err %1; worst row: token %2 (seq %3, kv_len %4) head %5 max abs err %6; "
                                    "%7 items (%8 empty), %9 groups")
                                .arg(err)
                                .arg(worst_t)
                                .arg(seq)
                                .arg(seqs[std::size_t(seq)].second)
                                .arg(worst_h)
                                .arg(worst)
                                .arg(plan.items.size())
                                .arg(n_empty)
                                .arg(plan.groups.size())
                                .arg(mode)));
    }

    // Shapes the decode kernel does not take come back as cudaErrorInvalidValue without a launch (the caller
    // falls back to attention()), and leave no sticky error behind.
    // attention_decode_rope (RoPE + KV write fused into the coalesced decode kernel) against the two launches it
    // replaces on a copy of the same data: output and pools bit for bit, and against the twins (ref::rope_kv_write,
    // ref::attention) within bf16 noise. Whether it fused shows in qkv: the fused kernel leaves the q rows there
    // un-rotated. Contexts of 1 to 4,100 keys, so the new key lands in a staged sub-tile, in one read back from
    // the pool (beyond each warp's first 32 keys, or in a launch too large to stage), alone in its split, and in a
    // whole-sequence block (1 split).
    void attention_decode_rope_data() {
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<bool>("qk_norm");
        QTest::addColumn<int>("splits");
        QTest::addColumn<bool>("fuses");
        QTest::addColumn<int>("n_seqs");      // 0: four sequences of 1 to 4,100 keys; else n_seqs of 1 to 97
        QTest::addColumn<int>("max_kv_len");  // AttentionParams::max_kv_len, the planner's hint (only speed may differ)
        QTest::addColumn<bool>("lora_delta");  // a pending q|k|v LoRA delta (RopeKvParams::qkv_delta) to add
        QTest::newRow("qwen3-8b group 4, 4 splits") << 4 << 2 << true << 4 << true << 0 << 0 << false;
        QTest::newRow("qwen3-8b group 4, whole sequences (8 warps)") << 4 << 2 << true << 1 << true << 0 << 0 << false;
        QTest::newRow("qwen3-0.6b group 2, 16 splits") << 2 << 2 << true << 16 << true << 0 << 0 << false;
        QTest::newRow("llama MHA, no q/k norm, 2 splits") << 1 << 3 << false << 2 << true << 0 << 0 << false;
        QTest::newRow("group 3 (padded rows), 4 splits") << 3 << 2 << true << 4 << true << 0 << 0 << false;
        // Grids beyond one block per SM of 2-4 rows walk on tensor cores (kMmaWalk), RoPE fused.
        QTest::newRow("256 blocks: fused, tensor-core walk") << 4 << 4 << true << 16 << true << 0 << 0 << false;
        QTest::newRow("512 blocks: fused, tensor-core walk") << 4 << 8 << true << 16 << true << 0 << 0 << false;
        QTest::newRow("qwen3-8b group 4, 40 whole sequences: tensor-core walk")
            << 4 << 8 << true << 1 << true << 40 << 0 << false;
        QTest::newRow("qwen3-0.6b group 2, 80 whole sequences: tensor-core walk")
            << 2 << 8 << true << 1 << true << 80 << 0 << false;
        QTest::newRow("group 8: two launches") << 8 << 1 << true << 4 << false << 0 << 0 << false;
        // Whole-sequence blocks of one row: 128 x 32 = 4,096 take 4 warps on any GPU that holds 3 blocks of 8 per SM
        // (more than one wave of 8-warp blocks); 8 x 32 = 256 take 8 warps on any GPU of 86 SMs or more.
        QTest::newRow("llama MHA, 128 whole sequences (4-warp blocks)")
            << 1 << 32 << false << 1 << true << 128 << 0 << false;
        QTest::newRow("llama MHA, 8 whole sequences (8-warp blocks)")
            << 1 << 32 << false << 1 << true << 8 << 0 << false;
        // With the hint: 4,096 blocks of 2,100 keys take 8-warp blocks (11 waves x 9 rounds against 6 x 17); 8
        // sequences of at most 97 keys 8 warps as without it (one wave and one round either way).
        QTest::newRow("llama MHA, 128 whole sequences, 2,100-key hint (8-warp dense blocks)")
            << 1 << 32 << false << 1 << true << 128 << 2100 << false;
        QTest::newRow("llama MHA, 8 whole sequences, 97-key hint") << 1 << 32 << false << 1 << true << 8 << 97 << false;
        // With a pending q|k|v LoRA delta: staged (group 4 in splits), the tensor-core walk, 4- and 8-warp MHA blocks.
        QTest::newRow("qwen3-8b group 4, 4 splits, LoRA delta") << 4 << 2 << true << 4 << true << 0 << 0 << true;
        QTest::newRow("qwen3-8b group 4, 40 whole sequences: tensor-core walk, LoRA delta")
            << 4 << 8 << true << 1 << true << 40 << 0 << true;
        QTest::newRow("qwen3-0.6b group 2, 16 splits, LoRA delta") << 2 << 2 << true << 16 << true << 0 << 0 << true;
        QTest::newRow("llama MHA, 128 whole sequences, LoRA delta")
            << 1 << 32 << false << 1 << true << 128 << 0 << true;
        QTest::newRow("llama MHA, 8 whole sequences, LoRA delta") << 1 << 32 << false << 1 << true << 8 << 0 << true;
        QTest::newRow("group 8: two launches, LoRA delta") << 8 << 1 << true << 4 << false << 0 << 0 << true;
    }

    void attention_decode_rope() {
        QFETCH(int, group);
        QFETCH(int, n_kv);
        QFETCH(bool, qk_norm);
        QFETCH(int, splits);
        QFETCH(bool, fuses);
        QFETCH(int, n_seqs);
        QFETCH(int, max_kv_len);
        QFETCH(bool, lora_delta);
        constexpr int hd = 128;
        const int n_heads = group * n_kv;
        std::mt19937 rng(group * 71 + n_kv * 7 + splits + n_seqs);
        std::vector<std::pair<int, int>> seqs = {{1, 1}, {1, 33}, {1, 129}, {1, 4100}};
        if (n_seqs > 0) {  // every length mod 32 and the fresh key in every warp's sub-tiles
            seqs.clear();
            for (int i = 0; i < n_seqs; ++i) seqs.push_back({1, 1 + i * 37 % 97});
        }
        const auto batch = make_paged_batch(rng, seqs, 16);
        const int n = batch.n_tokens(), stride = (n_heads + 2 * n_kv) * hd + 8;
        const auto qkv = random_bf16(rng, std::size_t(n) * stride, -3.0f, 3.0f);
        const auto delta = random_f32(rng, qkv.size(), -0.5f, 0.5f);
        const auto qn = random_bf16(rng, hd, 0.5f, 1.5f), kn = random_bf16(rng, hd, 0.5f, 1.5f);
        const auto inv_freq = ref::rope_inv_freq(hd, 1000000.0f, {});
        // Pools hold earlier keys; this step's slots are NaN until the K/V write fills them.
        auto k_pages = random_bf16(rng, std::size_t(batch.n_pages) * 16 * n_kv * hd, -2.0f, 2.0f);
        auto v_pages = random_bf16(rng, k_pages.size(), -2.0f, 2.0f);
        for (int32_t slot : batch.kv_slots)
            for (int e = 0; e < n_kv * hd; ++e)
                k_pages[std::size_t(slot) * n_kv * hd + e] = v_pages[std::size_t(slot) * n_kv * hd + e] = kNanBf16;

        // The twins: RoPE + KV write, then attention over the rotated q.
        auto ref_qkv = qkv, ref_k = k_pages, ref_v = v_pages;
        RopeKvParams hr;
        hr.qkv = ref_qkv.data(), hr.qkv_row_stride = stride, hr.n_tokens = n, hr.n_heads = n_heads;
        hr.n_kv_heads = n_kv, hr.head_dim = hd, hr.positions = batch.positions.data();
        hr.kv_slots = batch.kv_slots.data(), hr.inv_freq = inv_freq.data();
        hr.q_norm = qk_norm ? qn.data() : nullptr, hr.k_norm = qk_norm ? kn.data() : nullptr;
        hr.k_pages = ref_k.data(), hr.v_pages = ref_v.data();
        if (lora_delta) hr.qkv_delta = delta.data();
        ref::rope_kv_write(hr);
        std::vector<uint16_t> want(std::size_t(n) * n_heads * hd);
        AttentionParams ha = host_attention_params(batch, ref_qkv, stride, ref_k, ref_v, n_heads, n_kv, hd,
                                                   1.0f / std::sqrt(float(hd)), want.data());
        ref::attention(ha);

        AttentionPlan plan;
        plan_attention_splits(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(),
                              batch.n_seqs(), 16, group, splits, plan);
        DeviceBuffer<AttentionWorkItem> d_items(plan.items);
        DeviceBuffer<AttentionMergeGroup> d_groups(plan.groups);
        DeviceBuffer<int32_t> d_pos(batch.positions), d_slots(batch.kv_slots);
        DeviceBuffer<float> d_freq(inv_freq), d_delta(delta);
        DeviceBuffer<uint16_t> d_qn(qn), d_kn(kn);
        // Run 0: rope_kv_write + attention_decode; run 1: attention_decode_rope. Each on its own copy.
        std::vector<uint16_t> outs[2], ks[2], vs[2], qkvs[2];
        for (int run = 0; run < 2; ++run) {
            DeviceAttention dev(ha, batch, qkv, k_pages, v_pages);
            DeviceBuffer<float> ws(std::vector<float>(attention_workspace_bytes(plan.items.size(), n_kv, hd) / 4, NAN));
            DeviceBuffer<int32_t> counters(
                std::vector<int32_t>(attention_decode_counters(plan.groups.size(), n_kv), 0));
            RopeKvParams r = hr;
            r.qkv = dev.q.get(), r.positions = d_pos.get(), r.kv_slots = d_slots.get(), r.inv_freq = d_freq.get();
            r.q_norm = qk_norm ? d_qn.get() : nullptr, r.k_norm = qk_norm ? d_kn.get() : nullptr;
            r.k_pages = dev.k.get(), r.v_pages = dev.v.get(), r.qkv_delta = lora_delta ? d_delta.get() : nullptr;
            AttentionParams d = dev.p;
            d.merge_counters = counters.get(), d.max_kv_len = max_kv_len;
            if (run == 0) {
                sync_check(rope_kv_write(r, nullptr));
                sync_check(loradesk::kernels::attention_decode(d, d_items.get(), int(plan.items.size()), d_groups.get(),
                                                               int(plan.groups.size()), ws.get(), nullptr));
            } else {
                sync_check(loradesk::kernels::attention_decode_rope(d, r, d_items.get(), int(plan.items.size()),
                                                                    d_groups.get(), int(plan.groups.size()), ws.get(),
                                                                    nullptr));
            }
            for (int32_t c : counters.download()) QCOMPARE(c, 0);
            outs[run] = dev.out.download(), ks[run] = dev.k.download(), vs[run] = dev.v.download();
            qkvs[run] = dev.q.download();
        }
        QVERIFY2(outs[1] == outs[0], "fused output differs from rope_kv_write + attention_decode");
        QVERIFY2(ks[1] == ks[0] && vs[1] == vs[0], "fused K/V pools differ from rope_kv_write's");
        QCOMPARE(qkvs[1] == qkv, fuses);  // fused: q left un-rotated in qkv; two launches: rotated in place
        QVERIFY2(ks[0] == ref_k || rel_l2(to_f32(ks[0]), to_f32(ref_k)) < kBf16Tol, "K pool vs the twin");
        QCOMPARE(vs[0], ref_v);
        const double err = rel_l2(to_f32(outs[1]), to_f32(want));
        QVERIFY2(err < kBf16Tol, qPrintable(QString("attention rel err %1 vs the twins").arg(err)));
    }

    void attention_decode_unsupported_data() {
        QTest::addColumn<int>("n_heads");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::addColumn<int>("k_misalign");
        QTest::newRow("hd 96") << 8 << 2 << 96 << 0;
        QTest::newRow("hd 19") << 4 << 2 << 19 << 0;
        QTest::newRow("hd 512") << 4 << 2 << 512 << 0;
        QTest::newRow("group 32") << 32 << 1 << 128 << 0;
        QTest::newRow("heads not a multiple of kv heads") << 6 << 4 << 128 << 0;
        QTest::newRow("no kv heads") << 8 << 0 << 128 << 0;
        QTest::newRow("k pool not 16-byte aligned") << 8 << 2 << 128 << 1;
    }
    void attention_decode_unsupported() {
        QFETCH(int, n_heads);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        QFETCH(int, k_misalign);
        DeviceBuffer<uint16_t> pool(std::size_t(4096));
        DeviceBuffer<float> ws(std::size_t(4096));
        AttentionParams d;
        d.k_pages = pool.get() + k_misalign, d.v_pages = pool.get(), d.n_seqs = 1, d.page_size = 16;
        d.n_heads = n_heads, d.n_kv_heads = n_kv, d.head_dim = hd;
        QVERIFY(!attention_decode_supported(d));
        AttentionWorkItem* items = nullptr;  // never dereferenced: nothing is launched
        AttentionMergeGroup* groups = nullptr;
        QCOMPARE(int(loradesk::kernels::attention_decode(d, items, 1, groups, 1, ws.get(), nullptr)),
                 int(cudaErrorInvalidValue));
        QCOMPARE(int(cudaGetLastError()), int(cudaSuccess));
    }

    // Tensor-core prefill kernel: sequences with n_q >= min_q go to prefill tiles, the rest to the split
    // kernel, both writing one NaN-poisoned output (min_q 1: every sequence, decode ones included, through
    // the prefill kernel). Long prompts, prompts over cached prefixes, n_q not a multiple of 16/64.
    void attention_prefill_data() {
        QTest::addColumn<int>("n_heads");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::addColumn<int>("page_size");
        QTest::addColumn<int>("min_q");
        QTest::addColumn<int>("q_pad");  // extra elements per q row; odd -> unaligned rows, scalar Q load
        QTest::newRow("gqa4 hd128 page16 mixed") << 32 << 8 << 128 << 16 << 16 << 0;
        QTest::newRow("gqa8 hd128 page5 all") << 16 << 2 << 128 << 5 << 1 << 0;
        QTest::newRow("gqa4 hd128 page16 unaligned q") << 8 << 2 << 128 << 16 << 16 << 3;
        QTest::newRow("mha hd64 page16 mixed") << 6 << 6 << 64 << 16 << 17 << 0;
        QTest::newRow("gqa4 hd64 page5 all") << 8 << 2 << 64 << 5 << 1 << 0;
        QTest::newRow("mqa4 hd256 page16 mixed") << 4 << 1 << 256 << 16 << 16 << 8;
        QTest::newRow("gqa8 hd256 page5 all") << 8 << 1 << 256 << 5 << 1 << 0;
        QTest::newRow("mha hd256 page5 mixed") << 2 << 2 << 256 << 5 << 2 << 0;
    }
    void attention_prefill() {
        QFETCH(int, n_heads);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        QFETCH(int, page_size);
        QFETCH(int, min_q);
        QFETCH(int, q_pad);
        QVERIFY(attention_prefill_supported(hd));
        std::mt19937 rng(n_heads * 31 + hd * 7 + page_size + min_q);
        auto batch = make_paged_batch(
            rng, {{1, 1}, {1, 733}, {200, 200}, {77, 300}, {19, 19}, {130, 700}, {64, 64}, {3, 40}, {5, 5}}, page_size);
        const int n = batch.n_tokens(), q_stride = n_heads * hd + q_pad, group = n_heads / n_kv;
        auto q = random_bf16(rng, std::size_t(n) * q_stride, -2.0f, 2.0f);
        auto k_pages = random_bf16(rng, std::size_t(batch.n_pages) * page_size * n_kv * hd, -2.0f, 2.0f);
        auto v_pages = random_bf16(rng, k_pages.size());
        std::vector<uint16_t> out(std::size_t(n) * n_heads * hd);
        const AttentionParams p = host_attention_params(batch, q, q_stride, k_pages, v_pages, n_heads, n_kv, hd,
                                                        1.0f / std::sqrt(float(hd)), out.data());
        ref::attention(p);
        AttentionPlan plan;
        std::vector<PrefillTile> tiles;
        plan_attention_mixed(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(), p.n_seqs,
                             page_size, group, 128, min_q, plan, tiles);
        QVERIFY(!tiles.empty());
        QCOMPARE(plan.items.empty(), min_q == 1);
        DeviceAttention dev(p, batch, q, k_pages, v_pages);
        DeviceBuffer<AttentionWorkItem> d_items(plan.items);
        DeviceBuffer<AttentionMergeGroup> d_groups(plan.groups);
        DeviceBuffer<PrefillTile> d_tiles(tiles);
        DeviceBuffer<float> d_ws(std::max<std::size_t>(attention_workspace_bytes(plan.items.size(), n_kv, hd) / 4, 1));
        const AttentionParams& d = dev.p;
        sync_check(loradesk::kernels::attention(d, d_items.get(), int(plan.items.size()), d_groups.get(),
                                                int(plan.groups.size()), d_ws.get(), nullptr));
        sync_check(loradesk::kernels::attention_prefill(d, d_tiles.get(), int(tiles.size()), nullptr));
        auto got = dev.out.download();
        double err = rel_l2(to_f32(got), to_f32(out));
        QVERIFY2(err < kBf16Tol, qPrintable(QString("prefill attention rel err %1 (%2 tiles, %3 split items): %4")
                                                .arg(err)
                                                .arg(tiles.size())
                                                .arg(plan.items.size())
                                                .arg(attention_mismatch(got, out, batch, n_heads, hd, kBf16Tol))));
    }

    // Shapes the prefill kernel does not take are refused before any launch, never a crash.
    void attention_prefill_rejects_bad_input() {
        QVERIFY(!attention_prefill_supported(96) && !attention_prefill_supported(19) &&
                !attention_prefill_supported(512));
        DeviceBuffer<uint16_t> pool(std::size_t(4096));
        DeviceBuffer<int32_t> ints(std::vector<int32_t>{0, 1});
        DeviceBuffer<PrefillTile> tile(std::vector<PrefillTile>{{0, 0}});
        AttentionParams p;
        p.q = pool.get(), p.q_row_stride = 128, p.k_pages = pool.get(), p.v_pages = pool.get(), p.out = pool.get();
        p.qo_indptr = ints.get(), p.kv_indptr = ints.get(), p.kv_indices = ints.get(), p.kv_last_page_len = ints.get();
        p.n_seqs = 1, p.page_size = 16, p.n_heads = 1, p.n_kv_heads = 1, p.head_dim = 96;
        QCOMPARE(loradesk::kernels::attention_prefill(p, tile.get(), 1, nullptr), cudaErrorInvalidValue);
        p.head_dim = 128, p.n_heads = 3, p.n_kv_heads = 2;
        QCOMPARE(loradesk::kernels::attention_prefill(p, tile.get(), 1, nullptr), cudaErrorInvalidValue);
        p.n_heads = 2, p.page_size = 0;
        QCOMPARE(loradesk::kernels::attention_prefill(p, tile.get(), 1, nullptr), cudaErrorInvalidValue);
        p.page_size = 16, p.k_pages = pool.get() + 1;  // not 16-byte aligned
        QCOMPARE(loradesk::kernels::attention_prefill(p, tile.get(), 1, nullptr), cudaErrorInvalidValue);
        p.k_pages = pool.get();
        QCOMPARE(loradesk::kernels::attention_prefill(p, nullptr, 1, nullptr), cudaErrorInvalidValue);
        QCOMPARE(loradesk::kernels::attention_prefill(p, tile.get(), 0, nullptr), cudaSuccess);
        QCOMPARE(cudaGetLastError(), cudaSuccess);
    }

    void silu_bias_argmax_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("cols");
        QTest::newRow("1x1") << 1 << 1;
        QTest::newRow("3x733") << 3 << 733;
        QTest::newRow("19x151936") << 19 << 151936;
        QTest::newRow("2x8193 (a partial last chunk)") << 2 << 8193;
        QTest::newRow("128x11008 (silu_mul's 8 columns a thread)") << 128 << 11008;
    }
    void silu_bias_argmax() {
        QFETCH(int, n);
        QFETCH(int, cols);
        std::mt19937 rng(n + cols);
        auto gu = random_bf16(rng, std::size_t(n) * 2 * cols, -6.0f, 6.0f);
        std::vector<uint16_t> out(std::size_t(n) * cols);
        ref::silu_mul(gu.data(), nullptr, n, cols, out.data());
        DeviceBuffer<uint16_t> d_gu(gu), d_out(std::vector<uint16_t>(out.size(), kNanBf16));
        sync_check(silu_mul(d_gu.get(), nullptr, n, cols, d_out.get(), nullptr));
        QVERIFY(rel_l2(to_f32(d_out.download()), to_f32(out)) < kBf16Tol);
        const auto delta = random_f32(rng, gu.size(), -1.0f, 1.0f);  // a pending LoRA delta on gate | up
        ref::silu_mul(gu.data(), delta.data(), n, cols, out.data());
        DeviceBuffer<float> d_delta(delta);
        sync_check(silu_mul(d_gu.get(), d_delta.get(), n, cols, d_out.get(), nullptr));
        QVERIFY(rel_l2(to_f32(d_out.download()), to_f32(out)) < kBf16Tol);

        auto bias = random_bf16(rng, cols);
        ref::bias_add(gu.data(), 2 * cols, bias.data(), n, cols);
        DeviceBuffer<uint16_t> d_bias(bias);
        sync_check(bias_add(d_gu.get(), 2 * cols, d_bias.get(), n, cols, nullptr));
        QVERIFY(rel_l2(to_f32(d_gu.download()), to_f32(gu)) < kBf16Tol);

        // The act-order column gather, from rows 2 * cols wide: a copy, so exact.
        std::vector<int32_t> order(static_cast<std::size_t>(cols));
        for (int i = 0; i < cols; ++i) order[std::size_t(i)] = int32_t(uint32_t(rng()) % uint32_t(2 * cols));
        std::vector<uint16_t> gathered(std::size_t(n) * cols);
        ref::gather_columns(gu.data(), 2 * cols, order.data(), n, cols, gathered.data());
        DeviceBuffer<int32_t> d_order(order);
        DeviceBuffer<uint16_t> d_gathered(std::vector<uint16_t>(gathered.size(), kNanBf16));
        sync_check(gather_columns(d_gu.get(), 2 * cols, d_order.get(), n, cols, d_gathered.get(), nullptr));
        QCOMPARE(d_gathered.download(), gathered);

        auto logits = random_f32(rng, std::size_t(n) * cols, -20.0f, 20.0f);
        if (cols > 5) logits[3] = logits[cols - 1] = 100.0f;  // a tie: the lower index wins
        std::vector<int32_t> am(n), got;
        ref::argmax(logits.data(), n, cols, am.data());
        DeviceBuffer<float> d_logits(logits);
        DeviceBuffer<int32_t> d_am(std::vector<int32_t>(n, -1));
        DeviceBuffer<uint8_t> ws(std::vector<uint8_t>(argmax_workspace_bytes(n), 0));
        for (int pass = 0; pass < 2; ++pass) {  // the workspace must be back at zero for the second launch
            d_am.upload(std::vector<int32_t>(n, -1));
            sync_check(argmax(d_logits.get(), n, cols, d_am.get(), ws.get(), nullptr));
            got = d_am.download();
            QCOMPARE(got, am);
            for (uint8_t b : ws.download()) QCOMPARE(int(b), 0);
        }
    }

    // Grammar masks: random sparse masks on every other row (plain rows between), against the reference twin.
    void masked_argmax_matches_ref_data() { silu_bias_argmax_data(); }
    void masked_argmax_matches_ref() {
        QFETCH(int, n);
        QFETCH(int, cols);
        std::mt19937 rng(7 * n + cols);
        auto logits = random_f32(rng, std::size_t(n) * cols, -20.0f, 20.0f);
        const int words = (cols + 31) / 32;
        std::vector<uint32_t> masks(std::size_t(n) * words);
        for (auto& w : masks) w = uint32_t(rng()) & uint32_t(rng()) & uint32_t(rng());  // ~1/8 of tokens allowed
        std::vector<int32_t> which(n);
        for (int r = 0; r < n; ++r) which[r] = r % 2 ? -1 : r;
        std::vector<int32_t> expected(n);
        ref::masked_argmax(logits.data(), n, cols, masks.data(), which.data(), words, expected.data());
        DeviceBuffer<float> d_logits(logits);
        DeviceBuffer<uint32_t> d_masks(masks);
        DeviceBuffer<int32_t> d_which(which), d_out(std::vector<int32_t>(n, -1));
        DeviceBuffer<uint8_t> ws(std::vector<uint8_t>(argmax_workspace_bytes(n), 0));
        for (int pass = 0; pass < 2; ++pass) {
            d_out.upload(std::vector<int32_t>(n, -1));
            sync_check(masked_argmax(d_logits.get(), n, cols, d_masks.get(), d_which.get(), words, d_out.get(),
                                     ws.get(), nullptr));
            QCOMPARE(d_out.download(), expected);
            for (uint8_t b : ws.download()) QCOMPARE(int(b), 0);
        }
    }
};

QTEST_GUILESS_MAIN(TstKernelsCuda)
#include "tst_kernels_cuda.moc"
