// CPU-only sanity of the kernel reference twins against independent direct formulas (no paging, no
// segments, no fusion): RMSNorm, rotary tables and rotation, paged attention, SGMV, planning. Runs in CI.
#include <QtTest>
#include <cmath>
#include <random>

#include "attention_plan.h"
#include "gemm_offer.h"
#include "kernel_test_util.h"
#include "ref/ref_kernels.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

class TstKernelTwins : public QObject {
    Q_OBJECT
  private slots:
    void rmsnorm_matches_formula_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("hidden");
        QTest::newRow("1x1") << 1 << 1;
        QTest::newRow("3x7") << 3 << 7;
        QTest::newRow("7x733") << 7 << 733;
    }
    void rmsnorm_matches_formula() {
        QFETCH(int, rows);
        QFETCH(int, hidden);
        std::mt19937 rng(rows * 1000 + hidden);
        auto x = random_bf16(rng, std::size_t(rows) * hidden);
        auto w = random_bf16(rng, hidden, 0.5f, 1.5f);
        auto residual = random_f32(rng, std::size_t(rows) * hidden, -4.0f, 4.0f);
        auto expect_res = residual;
        std::vector<float> expect(std::size_t(rows) * hidden);
        for (int r = 0; r < rows; ++r) {
            double ss = 0;
            for (int c = 0; c < hidden; ++c) {
                float& h = expect_res[r * hidden + c];
                h += ref::bf16_to_f32(x[r * hidden + c]);
                ss += double(h) * h;
            }
            double inv = 1.0 / std::sqrt(ss / hidden + 1e-5);
            for (int c = 0; c < hidden; ++c)
                expect[r * hidden + c] = float(expect_res[r * hidden + c] * inv * ref::bf16_to_f32(w[c]));
        }
        std::vector<uint16_t> out(std::size_t(rows) * hidden);
        ref::add_rmsnorm(x.data(), nullptr, residual.data(), w.data(), nullptr, rows, hidden, 1e-5f, out.data());
        QCOMPARE(max_abs_diff(residual, expect_res), 0.0);
        QVERIFY(rel_l2(to_f32(out), expect) < 4e-3);  // bf16 output rounding only
        // Gathered rows normalise only the rows asked for, in the order asked for.
        std::vector<int32_t> pick{rows - 1, 0};
        std::vector<uint16_t> picked(2 * std::size_t(hidden));
        auto res2 = expect_res;
        ref::add_rmsnorm(nullptr, nullptr, res2.data(), w.data(), pick.data(), rows > 1 ? 2 : 1, hidden, 1e-5f,
                         picked.data());
        for (int c = 0; c < hidden; ++c) QCOMPARE(picked[c], out[std::size_t(rows - 1) * hidden + c]);
    }

    void rope_inv_freq_scalings() {
        auto plain = ref::rope_inv_freq(128, 500000.0f, {});
        QCOMPARE(plain.size(), std::size_t(64));
        QCOMPARE(plain[0], 1.0f);
        QVERIFY(std::fabs(plain[1] - float(std::pow(500000.0, -2.0 / 128))) < 1e-9);
        ref::RopeScalingSpec lin{RopeKind::linear, 4.0f};
        auto linear = ref::rope_inv_freq(128, 500000.0f, lin);
        for (int i = 0; i < 64; ++i) QCOMPARE(linear[i], float(double(plain[i]) / 4.0));
        // Llama 3.1: factor 8, low 1, high 4, original 8192. High frequencies (short wavelengths) are kept,
        // the lowest are divided by the factor, the band between is interpolated.
        ref::RopeScalingSpec l3{RopeKind::llama3, 8.0f, 1.0f, 4.0f, 8192};
        auto llama3 = ref::rope_inv_freq(128, 500000.0f, l3);
        QCOMPARE(llama3[0], plain[0]);
        QVERIFY(std::fabs(llama3[63] - plain[63] / 8.0f) < 1e-12f);
        int between = 0;
        for (int i = 0; i < 64; ++i) {
            double wl = 2 * M_PI / plain[i];
            if (wl >= 8192.0 / 4 && wl <= 8192.0) {
                ++between;
                QVERIFY(llama3[i] < plain[i] && llama3[i] > plain[i] / 8.0f);
            }
        }
        QVERIFY(between > 0);
    }

    void rope_rotation_and_kv_write() {
        std::mt19937 rng(7);
        const int n_heads = 4, n_kv = 2, hd = 8, page_size = 4;
        auto batch = make_paged_batch(rng, {{3, 5}, {1, 9}}, page_size);
        const int n = batch.n_tokens(), stride = (n_heads + 2 * n_kv) * hd;
        auto qkv = random_bf16(rng, std::size_t(n) * stride);
        auto orig = qkv;
        std::vector<uint16_t> k_pages(std::size_t(batch.n_pages) * page_size * n_kv * hd, 0xffff);
        auto v_pages = k_pages;
        auto inv_freq = ref::rope_inv_freq(hd, 10000.0f, {});
        RopeKvParams p;
        p.qkv = qkv.data(), p.qkv_row_stride = stride, p.n_tokens = n, p.n_heads = n_heads, p.n_kv_heads = n_kv;
        p.head_dim = hd, p.positions = batch.positions.data(), p.kv_slots = batch.kv_slots.data();
        p.inv_freq = inv_freq.data(), p.k_pages = k_pages.data(), p.v_pages = v_pages.data();
        ref::rope_kv_write(p);
        for (int t = 0; t < n; ++t) {
            float pos = float(batch.positions[t]);
            for (int h = 0; h < n_heads; ++h)
                for (int i = 0; i < hd / 2; ++i) {
                    float x1 = ref::bf16_to_f32(orig[t * stride + h * hd + i]);
                    float x2 = ref::bf16_to_f32(orig[t * stride + h * hd + i + hd / 2]);
                    float a = pos * inv_freq[i];
                    QVERIFY(std::fabs(ref::bf16_to_f32(qkv[t * stride + h * hd + i]) -
                                      (x1 * std::cos(a) - x2 * std::sin(a))) < 1e-2);
                }
            for (int h = 0; h < n_kv; ++h)
                for (int d = 0; d < hd; ++d)  // V is copied untouched into its page slot
                    QCOMPARE(v_pages[(std::size_t(batch.kv_slots[t]) * n_kv + h) * hd + d],
                             orig[t * stride + (n_heads + n_kv + h) * hd + d]);
        }
    }

    // Paged twin == naive softmax(q k^T * scale + causal mask) v on contiguous K/V.
    void attention_matches_naive_data() {
        QTest::addColumn<int>("n_heads");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("hd");
        QTest::newRow("mha") << 3 << 3 << 16;
        QTest::newRow("gqa") << 8 << 2 << 32;
        QTest::newRow("mqa odd dim") << 4 << 1 << 7;
    }
    void attention_matches_naive() {
        QFETCH(int, n_heads);
        QFETCH(int, n_kv);
        QFETCH(int, hd);
        std::mt19937 rng(n_heads * 31 + hd);
        const int page_size = 4;
        auto batch = make_paged_batch(rng, {{5, 5}, {1, 13}, {3, 19}}, page_size);
        const int n = batch.n_tokens(), q_stride = n_heads * hd + 5;
        auto q = random_bf16(rng, std::size_t(n) * q_stride);
        auto k_pages = random_bf16(rng, std::size_t(batch.n_pages) * page_size * n_kv * hd);
        auto v_pages = random_bf16(rng, k_pages.size());
        std::vector<uint16_t> out(std::size_t(n) * n_heads * hd);
        AttentionParams p;
        p.q = q.data(), p.q_row_stride = q_stride, p.k_pages = k_pages.data(), p.v_pages = v_pages.data();
        p.qo_indptr = batch.qo_indptr.data(), p.kv_indptr = batch.kv_indptr.data();
        p.kv_indices = batch.kv_indices.data(), p.kv_last_page_len = batch.kv_last_page_len.data();
        p.n_seqs = batch.n_seqs(), p.page_size = page_size, p.n_heads = n_heads, p.n_kv_heads = n_kv;
        p.head_dim = hd, p.scale = 1.0f / std::sqrt(float(hd)), p.out = out.data();
        ref::attention(p);
        std::vector<float> expect(out.size());
        for (int s = 0; s < batch.n_seqs(); ++s) {
            int n_q = batch.qo_indptr[s + 1] - batch.qo_indptr[s];
            int kv_len = (batch.kv_indptr[s + 1] - batch.kv_indptr[s] - 1) * page_size + batch.kv_last_page_len[s];
            // Gather this sequence's K/V into contiguous [kv_len, n_kv, hd] arrays first.
            std::vector<float> K(std::size_t(kv_len) * n_kv * hd), V(K.size());
            for (int j = 0; j < kv_len; ++j) {
                std::size_t slot =
                    std::size_t(batch.kv_indices[batch.kv_indptr[s] + j / page_size]) * page_size + j % page_size;
                for (int e = 0; e < n_kv * hd; ++e) {
                    K[std::size_t(j) * n_kv * hd + e] = ref::bf16_to_f32(k_pages[slot * n_kv * hd + e]);
                    V[std::size_t(j) * n_kv * hd + e] = ref::bf16_to_f32(v_pages[slot * n_kv * hd + e]);
                }
            }
            for (int i = 0; i < n_q; ++i) {
                int t = batch.qo_indptr[s] + i;
                for (int h = 0; h < n_heads; ++h) {
                    int kvh = h * n_kv / n_heads;
                    std::vector<double> w(kv_len, 0.0);
                    double mx = -1e30, sum = 0;
                    for (int j = 0; j < kv_len; ++j) {
                        if (j > kv_len - n_q + i) continue;  // causal
                        double d = 0;
                        for (int e = 0; e < hd; ++e)
                            d += ref::bf16_to_f32(q[std::size_t(t) * q_stride + h * hd + e]) *
                                 K[(std::size_t(j) * n_kv + kvh) * hd + e];
                        w[j] = d / std::sqrt(double(hd));
                        mx = std::max(mx, w[j]);
                    }
                    for (int j = 0; j <= kv_len - n_q + i; ++j) sum += (w[j] = std::exp(w[j] - mx));
                    for (int e = 0; e < hd; ++e) {
                        double o = 0;
                        for (int j = 0; j <= kv_len - n_q + i; ++j)
                            o += w[j] * V[(std::size_t(j) * n_kv + kvh) * hd + e];
                        expect[(std::size_t(t) * n_heads + h) * hd + e] = float(o / sum);
                    }
                }
            }
        }
        QVERIFY(rel_l2(to_f32(out), expect) < 4e-3);
    }

    // SGMV twin == y + scale * B (A x) computed per token straight from the unpadded weights.
    void sgmv_matches_lora_formula() {
        std::mt19937 rng(11);
        const int in = 19, n_slots = 3, max_rank = 8, n = 7;
        const int outs[2] = {5, 3};
        const int ranks[n_slots + 1] = {0, 3, 8, 1};
        const float scales[n_slots + 1] = {0.0f, 0.5f, 2.0f, 1.0f};
        std::vector<int32_t> seg_indptr{0, 2, 3, 6, 7}, seg_slot{1, 0, 3, 2};
        const int64_t slot_stride = int64_t(max_rank) * std::max(in, outs[0] + outs[1]);
        auto a0 = random_bf16(rng, n_slots * slot_stride), a1 = random_bf16(rng, n_slots * slot_stride);
        auto b0 = random_bf16(rng, n_slots * slot_stride), b1 = random_bf16(rng, n_slots * slot_stride);
        std::vector<int32_t> rank_v(ranks, ranks + n_slots + 1);
        std::vector<float> scale_v(scales, scales + n_slots + 1);
        auto x = random_bf16(rng, std::size_t(n) * in);
        auto y = random_bf16(rng, std::size_t(n) * 9);
        auto y0 = y;
        std::vector<float> xa(std::size_t(n) * 2 * max_rank, NAN);
        SgmvParams p;
        p.x = x.data(), p.x_row_stride = in, p.in_features = in, p.xa = xa.data(), p.y = y.data(), p.y_row_stride = 9;
        p.seg_indptr = seg_indptr.data(), p.seg_slot = seg_slot.data(), p.n_segs = 4, p.max_seg_len = 3;
        p.max_rank = max_rank, p.slot_stride = slot_stride, p.n_slices = 2;
        p.slices[0] = {a0.data(), b0.data(), rank_v.data(), scale_v.data(), 0, outs[0]};
        p.slices[1] = {a1.data(), b1.data(), rank_v.data(), scale_v.data(), outs[0] + 1, outs[1]};
        ref::sgmv_shrink(p);
        ref::sgmv_expand(p);
        for (int s = 0; s < 4; ++s)
            for (int t = seg_indptr[s]; t < seg_indptr[s + 1]; ++t)
                for (int c = 0; c < 9; ++c) {
                    float expect = ref::bf16_to_f32(y0[t * 9 + c]);
                    int slot = seg_slot[s], j = c < outs[0] ? 0 : (c > outs[0] ? 1 : -1);
                    if (slot > 0 && j >= 0) {
                        const auto& a = j == 0 ? a0 : a1;
                        const auto& b = j == 0 ? b0 : b1;
                        int col = c - (j == 0 ? 0 : outs[0] + 1);
                        double delta = 0;
                        for (int r = 0; r < ranks[slot]; ++r) {
                            double ax = 0;
                            for (int i = 0; i < in; ++i)
                                ax += ref::bf16_to_f32(a[(slot - 1) * slot_stride + r * in + i]) *
                                      ref::bf16_to_f32(x[t * in + i]);
                            delta += ax * ref::bf16_to_f32(b[(slot - 1) * slot_stride + r * outs[j] + col]);
                        }
                        expect += float(scales[slot] * delta);
                    }
                    float got = ref::bf16_to_f32(y[t * 9 + c]);
                    QVERIFY2(std::fabs(got - expect) <= 1e-2f * std::max(1.0f, std::fabs(expect)),
                             qPrintable(QString("t %1 c %2: %3 vs %4").arg(t).arg(c).arg(got).arg(expect)));
                }
    }

    // A pending LoRA delta (SgmvParams::delta) read by the kernel after the projection gives what the expand into y
    // gives, bit for bit: the expand writing delta leaves y alone, and add_rmsnorm, silu_mul and rope_kv_write read
    // bf16(y + delta). Slot 0, an adapter without the second slice, and adapters of several ranks are all there.
    void pending_delta_equals_the_expand() {
        std::mt19937 rng(23);
        const int in = 19, n_slots = 3, max_rank = 8, n = 7, half = 4, width = 2 * half;
        const int ranks[2][n_slots + 1] = {{0, 3, 8, 1}, {0, 5, 0, 2}};
        const float scales[n_slots + 1] = {0.0f, 0.5f, 2.0f, 1.0f};
        std::vector<int32_t> seg_indptr{0, 2, 3, 6, 7}, seg_slot{1, 0, 3, 2};
        const int64_t slot_stride = int64_t(max_rank) * in;
        std::vector<std::vector<uint16_t>> a, bt;
        std::vector<std::vector<int32_t>> rank_v;
        for (int j = 0; j < 2; ++j)
            a.push_back(random_bf16(rng, n_slots * slot_stride)), bt.push_back(random_bf16(rng, n_slots * slot_stride)),
                rank_v.emplace_back(ranks[j], ranks[j] + n_slots + 1);
        std::vector<float> scale_v(scales, scales + n_slots + 1);
        auto x = random_bf16(rng, std::size_t(n) * in);
        const auto y0 = random_bf16(rng, std::size_t(n) * width, -3.0f, 3.0f);
        std::vector<float> xa(std::size_t(n) * 2 * max_rank, NAN), delta(y0.size(), NAN);
        auto y = y0, untouched = y0;
        SgmvParams p;
        p.x = x.data(), p.x_row_stride = in, p.in_features = in, p.xa = xa.data(), p.y = y.data();
        p.y_row_stride = width;
        p.seg_indptr = seg_indptr.data(), p.seg_slot = seg_slot.data(), p.n_segs = 4, p.max_seg_len = 3;
        p.max_rank = max_rank, p.slot_stride = slot_stride, p.n_slices = 2;
        for (int j = 0; j < 2; ++j)
            p.slices[j] = {a[j].data(), bt[j].data(), rank_v[j].data(), scale_v.data(), j * half, half};
        ref::sgmv_shrink(p);
        ref::sgmv_expand(p);  // into y
        SgmvParams pd = p;
        pd.y = untouched.data(), pd.delta = delta.data();
        ref::sgmv_expand(pd);
        QVERIFY(untouched == y0);
        for (float d : delta) QVERIFY(!std::isnan(d));         // every column of every token written
        QCOMPARE(delta[std::size_t(2) * width + 1], 0.0f);     // token 2: slot 0
        QCOMPARE(delta[std::size_t(6) * width + half], 0.0f);  // token 6: slot 2, rank 0 on the second slice

        // gate | up
        std::vector<uint16_t> act_y(std::size_t(n) * half), act_d(act_y.size());
        ref::silu_mul(y.data(), nullptr, n, half, act_y.data());
        ref::silu_mul(y0.data(), delta.data(), n, half, act_d.data());
        QVERIFY(act_y == act_d);

        // the residual add before a norm
        auto w = random_bf16(rng, width, 0.5f, 1.5f);
        auto res_y = random_f32(rng, y0.size(), -4.0f, 4.0f), res_d = res_y;
        std::vector<uint16_t> norm_y(y0.size()), norm_d(y0.size());
        ref::add_rmsnorm(y.data(), nullptr, res_y.data(), w.data(), nullptr, n, width, 1e-6f, norm_y.data());
        ref::add_rmsnorm(y0.data(), delta.data(), res_d.data(), w.data(), nullptr, n, width, 1e-6f, norm_d.data());
        QVERIFY(res_y == res_d);
        QVERIFY(norm_y == norm_d);

        // q | k | v (2 q heads, 1 KV head of head_dim 2): rotated q in place, K and V into their pages
        auto batch = make_paged_batch(rng, {{3, 5}, {4, 9}}, 4);
        QCOMPARE(batch.n_tokens(), n);
        auto inv_freq = ref::rope_inv_freq(2, 10000.0f, {});
        auto qn = random_bf16(rng, 2, 0.5f, 1.5f), kn = random_bf16(rng, 2, 0.5f, 1.5f);
        std::vector<uint16_t> pages(std::size_t(batch.n_pages) * 4 * 2, 0xffff);
        auto qkv_y = y, qkv_d = y0;
        auto k_y = pages, v_y = pages, k_d = pages, v_d = pages;
        RopeKvParams r;
        r.qkv_row_stride = width, r.n_tokens = n, r.n_heads = 2, r.n_kv_heads = 1, r.head_dim = 2;
        r.positions = batch.positions.data(), r.kv_slots = batch.kv_slots.data(), r.inv_freq = inv_freq.data();
        r.q_norm = qn.data(), r.k_norm = kn.data();
        RopeKvParams rd = r;
        r.qkv = qkv_y.data(), r.k_pages = k_y.data(), r.v_pages = v_y.data();
        rd.qkv = qkv_d.data(), rd.k_pages = k_d.data(), rd.v_pages = v_d.data(), rd.qkv_delta = delta.data();
        ref::rope_kv_write(r);
        ref::rope_kv_write(rd);
        for (int t = 0; t < n; ++t)
            for (int c = 0; c < 4; ++c) QCOMPARE(qkv_d[std::size_t(t) * width + c], qkv_y[std::size_t(t) * width + c]);
        QVERIFY(k_d == k_y);
        QVERIFY(v_d == v_y);
    }

    // bf16_gemm.h's tuning keeps the fastest offer, but not over cuBLASLt's first unless it beats it by the margin.
    void gemm_offer_choice() {
        const float faster[] = {10.0f, 9.0f, 9.5f};  // 10 % faster: taken
        QCOMPARE(pick_gemm_offer(faster, 3), 1);
        const float tied[] = {10.0f, 9.8f, 9.9f};  // 2 % faster: the first offer stays
        QCOMPARE(pick_gemm_offer(tied, 3), 0);
        const float first_failed[] = {0.0f, 12.0f, 11.0f};
        QCOMPARE(pick_gemm_offer(first_failed, 3), 2);
        const float none[] = {0.0f, -1.0f};
        QCOMPARE(pick_gemm_offer(none, 2), -1);
        QCOMPARE(pick_gemm_offer(faster, 1), 0);
    }

    void attention_plan_covers_causal_keys() {
        std::vector<int32_t> qo{0, 1, 41}, kv_indptr{0, 7, 10}, last{5, 16};  // seq0: decode at 101; seq1: 40 new of 48
        AttentionPlan plan;
        plan_attention(qo.data(), kv_indptr.data(), last.data(), 2, 16, 4, 64, plan);
        // seq0: 4 rows, keys 0..101 in chunks of 64 -> 2 items; seq1: 160 rows -> 10 tiles.
        QCOMPARE(plan.groups.size(), std::size_t(11));
        QCOMPARE(plan.groups[0].item_end - plan.groups[0].item_begin, 2);
        QCOMPARE(plan.items[1].kv_end, 101);
        for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
            const auto& g = plan.groups[gi];
            int expect_begin = 0;
            for (int i = g.item_begin; i < g.item_end; ++i) {
                QCOMPARE(plan.items[i].kv_begin, expect_begin);
                QCOMPARE(plan.items[i].merge_group, int(gi));  // the decode kernel's fused merge relies on it
                expect_begin = plan.items[i].kv_end;
            }
            if (g.seq == 1) {
                int last_tok = (std::min(g.row_begin + kAttentionTileRows, 160) - 1) / 4;
                QCOMPARE(expect_begin, 48 - 40 + last_tok + 1);  // exactly up to the tile's causal horizon
            }
        }
    }

    void attention_split_plan_data() {
        QTest::addColumn<int>("n_splits");
        for (int s : {1, 3, 8, 64}) QTest::newRow(qPrintable(QString("splits %1").arg(s))) << s;
    }
    // Fixed splits (decode graphs): the item count depends only on the shape, ranges tile [0, horizon).
    void attention_split_plan() {
        QFETCH(int, n_splits);
        std::vector<int32_t> qo{0, 1, 2, 42}, kv_indptr{0, 7, 8, 11}, last{5, 1, 16};  // decode at 101, at 1, 40 of 48
        AttentionPlan plan;
        plan_attention_splits(qo.data(), kv_indptr.data(), last.data(), 3, 16, 4, n_splits, plan);
        QCOMPARE(plan.groups.size(), std::size_t(1 + 1 + 10));
        QCOMPARE(plan.items.size(), plan.groups.size() * std::size_t(n_splits));
        for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
            const auto& g = plan.groups[gi];
            QCOMPARE(g.item_end - g.item_begin, n_splits);
            int expect_begin = 0;
            for (int i = g.item_begin; i < g.item_end; ++i) {
                const auto& it = plan.items[std::size_t(i)];
                QCOMPARE(it.kv_begin, expect_begin);
                QCOMPARE(it.merge_group, int(gi));
                QVERIFY(it.kv_end >= it.kv_begin);
                QVERIFY(it.kv_begin % 32 == 0 || it.kv_begin == it.kv_end);
                expect_begin = it.kv_end;
            }
            const int horizon = g.seq == 0   ? 101
                                : g.seq == 1 ? 1
                                             : 48 - 40 + (std::min(g.row_begin + 16, 160) - 1) / 4 + 1;
            QCOMPARE(expect_begin, horizon);
        }
    }

    void attention_mixed_plan_data() {
        QTest::addColumn<int>("min_q");
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("page_size");
        for (int min_q : {1, 2, 17, 41, 1000})
            for (int group : {1, 4, 8})
                for (int ps : {16, 5})
                    QTest::newRow(qPrintable(QString("min_q %1 group %2 page %3").arg(min_q).arg(group).arg(ps)))
                        << min_q << group << ps;
    }
    // Mixed prefill/split planning: every (seq, row) lands exactly once in a split group or a prefill tile,
    // long sequences (n_q >= min_q) only in tiles ordered by causal horizon, the rest planned as
    // plan_attention plans them; nothing qualifies -> identical to plan_attention.
    void attention_mixed_plan() {
        QFETCH(int, min_q);
        QFETCH(int, group);
        QFETCH(int, page_size);
        std::mt19937 rng(min_q * 31 + group + page_size);
        // (n_q, kv_len): decode, short prompt, prompt over a cached prefix, long prompt, odd sizes.
        auto batch =
            make_paged_batch(rng, {{1, 101}, {17, 17}, {40, 48}, {300, 300}, {65, 1000}, {2, 2}, {1, 1}}, page_size);
        const int n_seqs = batch.n_seqs();
        AttentionPlan split;
        std::vector<PrefillTile> tiles{{99, 99}};  // stale content must be cleared
        plan_attention_mixed(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(), n_seqs,
                             page_size, group, 64, min_q, split, tiles);
        std::vector<std::vector<int>> hits(static_cast<std::size_t>(n_seqs));
        std::vector<int> kv_len(static_cast<std::size_t>(n_seqs)), n_q(static_cast<std::size_t>(n_seqs));
        for (int s = 0; s < n_seqs; ++s) {
            n_q[s] = batch.qo_indptr[s + 1] - batch.qo_indptr[s];
            int pages = batch.kv_indptr[s + 1] - batch.kv_indptr[s];
            kv_len[s] = (pages - 1) * page_size + batch.kv_last_page_len[s];
            hits[s].assign(std::size_t(n_q[s]) * group, 0);
        }
        for (const auto& g : split.groups) {
            QVERIFY2(n_q[g.seq] < min_q,
                     qPrintable(QString("seq %1 (n_q %2) split-planned").arg(g.seq).arg(n_q[g.seq])));
            for (int r = g.row_begin; r < std::min(g.row_begin + kAttentionTileRows, n_q[g.seq] * group); ++r)
                ++hits[g.seq][r];
        }
        int prev_horizon = INT32_MAX;
        for (const auto& t : tiles) {
            QVERIFY2(n_q[t.seq] >= min_q,
                     qPrintable(QString("seq %1 (n_q %2) in a prefill tile").arg(t.seq).arg(n_q[t.seq])));
            const int end = std::min(t.row_begin + kPrefillTileRows, n_q[t.seq] * group);
            QVERIFY(t.row_begin % kPrefillTileRows == 0 && t.row_begin < end);
            for (int r = t.row_begin; r < end; ++r) ++hits[t.seq][r];
            const int horizon = kv_len[t.seq] - n_q[t.seq] + (end - 1) / group + 1;
            QVERIFY2(horizon <= prev_horizon, "tiles must come longest causal horizon first");
            prev_horizon = horizon;
        }
        for (int s = 0; s < n_seqs; ++s)
            for (std::size_t r = 0; r < hits[s].size(); ++r)
                QVERIFY2(hits[s][r] == 1,
                         qPrintable(QString("seq %1 row %2 covered %3 times").arg(s).arg(r).arg(hits[s][r])));
        // The split part is plan_attention's plan of the short sequences, item for item.
        AttentionPlan full;
        plan_attention(batch.qo_indptr.data(), batch.kv_indptr.data(), batch.kv_last_page_len.data(), n_seqs, page_size,
                       group, 64, full);
        std::size_t gi = 0;
        for (const auto& g : full.groups) {
            if (n_q[g.seq] >= min_q) continue;
            QVERIFY(gi < split.groups.size());
            const auto& h = split.groups[gi++];
            QCOMPARE(h.seq, g.seq);
            QCOMPARE(h.row_begin, g.row_begin);
            QCOMPARE(h.item_end - h.item_begin, g.item_end - g.item_begin);
            for (int i = 0; i < g.item_end - g.item_begin; ++i) {
                QCOMPARE(split.items[h.item_begin + i].kv_begin, full.items[g.item_begin + i].kv_begin);
                QCOMPARE(split.items[h.item_begin + i].kv_end, full.items[g.item_begin + i].kv_end);
                QCOMPARE(split.items[h.item_begin + i].seq, g.seq);
            }
        }
        QCOMPARE(gi, split.groups.size());
        if (min_q > 300) QVERIFY(tiles.empty() && split.items.size() == full.items.size());
    }

    void argmax_first_of_ties() {
        std::vector<float> logits{1, 3, 3, -1, NAN, -2, -5, -2};
        std::vector<int32_t> out(2);
        ref::argmax(logits.data(), 2, 4, out.data());
        QCOMPARE(out[0], 1);
        QCOMPARE(out[1], 1);
    }
    // A constrained row sees only its mask's tokens; an unconstrained row in the same call sees all.
    void masked_argmax_keeps_to_the_mask() {
        std::vector<float> logits{1, 3, 3, -1, 9, 0, -5, 2, 7, 7, 1, 1};
        const std::vector<uint32_t> masks{0b1001u, 0b0100u};  // mask 0: tokens 0 and 3; mask 1: token 2
        std::vector<int32_t> out(3);
        ref::masked_argmax(logits.data(), 3, 4, masks.data(), std::vector<int32_t>{0, -1, 1}.data(), 1, out.data());
        QCOMPARE(out, (std::vector<int32_t>{0, 0, 2}));
        ref::masked_argmax(logits.data(), 1, 4, std::vector<uint32_t>{0u}.data(), std::vector<int32_t>{0}.data(), 1,
                           out.data());
        QCOMPARE(out[0], 0);  // nothing allowed
    }
};

QTEST_GUILESS_MAIN(TstKernelTwins)
#include "tst_kernel_twins.moc"
