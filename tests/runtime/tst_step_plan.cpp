// engine/runtime/cuda/step_plan: the CUDA runner's host step planner, no GPU needed. LoRA segments, the decode
// split heuristic, graph buckets, and the packed metadata block of eager and graph steps checked array by
// array against the batch it came from (offsets from the one MetaLayout, pad rows, alignment); every graph
// plan of one key has the offsets of the plan its graph was captured from, and a reused plan leaves nothing stale.
// And the kernels a quantized call site tries, in order (quant_route.h).
#include <QtTest>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "runtime/cuda/quant_route.h"
#include "runtime/cuda/step_plan.h"

using namespace loradesk::runtime;
using namespace loradesk::runtime::cuda;

namespace {

constexpr int kPageSize = 16, kScratchPage = 999;

// Sequence s has n_new[s] new tokens over kv_len[s] keys (new ones included) and LoRA slot lora_slots[s]; its pages
// are numbered from 100 on, its sampled row is its last token.
ForwardBatch make_batch(const QList<int>& n_new, const QList<int>& kv_len, const QList<int>& lora_slots) {
    ForwardBatch b;
    b.page_size = kPageSize;
    b.qo_indptr = {0};
    b.kv_indptr = {0};
    int page = 100;
    for (int s = 0; s < n_new.size(); ++s) {
        for (int i = 0; i < n_new[s]; ++i) {
            b.token_ids.push_back(1000 + b.n_tokens());
            b.positions.push_back(kv_len[s] - n_new[s] + i);
        }
        b.qo_indptr.push_back(b.n_tokens());
        const int n_pages = (kv_len[s] + kPageSize - 1) / kPageSize;
        for (int p = 0; p < n_pages; ++p) b.kv_indices.push_back(page++);
        b.kv_indptr.push_back(int32_t(b.kv_indices.size()));
        b.kv_last_page_len.push_back(kv_len[s] - (n_pages - 1) * kPageSize);
        b.seq_lora_slot.push_back(lora_slots[s]);
        if (n_new[s] > 0) b.logits_indices.push_back(b.n_tokens() - 1);
    }
    b.validate(100000, 100000);
    return b;
}

PlannerConfig config(bool prefill_kernel = true) {
    PlannerConfig c;
    c.page_size = kPageSize, c.n_heads = 32, c.n_kv_heads = 8, c.n_sms = 132;
    c.prefill_kernel = prefill_kernel, c.decode_kernel = true, c.scratch_page = kScratchPage;
    return c;
}

PlannerLimits limits(int tokens = 256, int meta = 1 << 20, int att_items = kPlannedAttentionItems) {
    return {tokens, tokens, att_items, meta};
}

QList<int> slice(const LaunchPlan& p, std::size_t offset, std::size_t n) {
    return QList<int>(p.meta.begin() + std::ptrdiff_t(offset), p.meta.begin() + std::ptrdiff_t(offset + n));
}

QList<int> list(const std::vector<int32_t>& v) { return QList<int>(v.begin(), v.end()); }

// Whether the metadata block at `at` holds `v`'s bytes (an empty vector: trivially; memcmp may not see its
// null data()).
template <class T>
bool holds(const int32_t* at, const std::vector<T>& v) {
    return v.empty() || std::memcmp(at, v.data(), v.size() * sizeof(T)) == 0;
}

// The real rows of the batch sit at the layout's offsets, and the plan structs are 16-byte aligned.
void check_rows(const LaunchPlan& p, const ForwardBatch& b) {
    const MetaLayout& L = p.layout;
    QCOMPARE(p.meta.size(), L.total);
    QCOMPARE(slice(p, L.token_ids, b.token_ids.size()), list(b.token_ids));
    QCOMPARE(slice(p, L.positions, b.positions.size()), list(b.positions));
    QCOMPARE(slice(p, L.qo, b.qo_indptr.size()), list(b.qo_indptr));
    QCOMPARE(slice(p, L.kv_indptr, b.kv_indptr.size()), list(b.kv_indptr));
    QCOMPARE(slice(p, L.last, b.kv_last_page_len.size()), list(b.kv_last_page_len));
    QCOMPARE(slice(p, L.logits, b.logits_indices.size()), list(b.logits_indices));
    QCOMPARE(slice(p, L.kv_indices, b.kv_indices.size()), list(b.kv_indices));
    for (int t = 0; t < b.n_tokens(); ++t) {  // the KV slot of a token holds its position
        int s = 0;
        while (b.qo_indptr[s + 1] <= t) ++s;
        const int pos = b.positions[t], page = b.kv_indices[std::size_t(b.kv_indptr[s] + pos / kPageSize)];
        QCOMPARE(p.meta[L.kv_slots + std::size_t(t)], page * kPageSize + pos % kPageSize);
    }
    QCOMPARE(L.items % 4, std::size_t(0));
    QCOMPARE(std::size_t(p.shape.n_items), p.attention.items.size());
    QVERIFY(holds(p.meta.data() + L.items, p.attention.items));
    QVERIFY(holds(p.meta.data() + L.groups, p.attention.groups));
    QVERIFY(holds(p.meta.data() + L.tiles, p.tiles));
    const int32_t* base = reinterpret_cast<const int32_t*>(std::uintptr_t(1) << 20);
    const StepMeta sm = bind_step_meta(p, base);
    QCOMPARE(sm.n_segs, p.shape.n_segs);
    QVERIFY(sm.kv_indices == base + L.kv_indices);
    QVERIFY(static_cast<const void*>(sm.items) == static_cast<const void*>(base + L.items));
    QCOMPARE(sm.tiles == nullptr, p.tiles.empty());
}

}  // namespace

class TstStepPlan : public QObject {
    Q_OBJECT
  private slots:
    void lora_segments_data() {
        QTest::addColumn<QList<int>>("n_new");
        QTest::addColumn<QList<int>>("lora_slots");
        QTest::addColumn<int>("max_tokens");
        QTest::addColumn<QList<int>>("want_indptr");
        QTest::addColumn<QList<int>>("want_slot");
        QTest::newRow("mixed adapters") << QList<int>{1, 1, 1, 1, 1} << QList<int>{1, 1, 2, 0, 0} << INT_MAX
                                        << QList<int>{0, 2, 3, 5} << QList<int>{1, 2, 0};
        QTest::newRow("base rows only") << QList<int>{5, 1, 1} << QList<int>{0, 0, 0} << INT_MAX << QList<int>{0, 7}
                                        << QList<int>{0};
        QTest::newRow("prefill and decode")
            << QList<int>{20, 1, 1} << QList<int>{2, 2, 3} << INT_MAX << QList<int>{0, 21, 22} << QList<int>{2, 3};
        QTest::newRow("cut at 4 tokens") << QList<int>{1, 1, 1, 1, 1, 1} << QList<int>{1, 1, 1, 1, 1, 1} << 4
                                         << QList<int>{0, 4, 6} << QList<int>{1, 1};
        QTest::newRow("cut at 1 token") << QList<int>{1, 1, 1} << QList<int>{1, 1, 2} << 1 << QList<int>{0, 1, 2, 3}
                                        << QList<int>{1, 1, 2};
        QTest::newRow("a sequence is never cut")
            << QList<int>{6, 1} << QList<int>{1, 1} << 4 << QList<int>{0, 6, 7} << QList<int>{1, 1};
        QTest::newRow("repeated slot") << QList<int>{1, 1, 1} << QList<int>{1, 2, 1} << INT_MAX
                                       << QList<int>{0, 1, 2, 3} << QList<int>{1, 2, 1};
        QTest::newRow("empty sequence skipped")
            << QList<int>{2, 0, 1} << QList<int>{1, 3, 1} << INT_MAX << QList<int>{0, 3} << QList<int>{1};
    }
    void lora_segments() {
        QFETCH(QList<int>, n_new);
        QFETCH(QList<int>, lora_slots);
        QFETCH(int, max_tokens);
        QFETCH(QList<int>, want_indptr);
        QFETCH(QList<int>, want_slot);
        QList<int> kv;
        for (int n : n_new) kv << n + 3;
        std::vector<int32_t> indptr, slot;
        cuda::lora_segments(make_batch(n_new, kv, lora_slots), max_tokens, indptr, slot);
        QCOMPARE(list(indptr), want_indptr);
        QCOMPARE(list(slot), want_slot);
    }

    void decode_splits_data() {
        QTest::addColumn<int>("n_seqs");
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("n_kv");
        QTest::addColumn<int>("max_kv");
        QTest::addColumn<int>("max_items");
        QTest::addColumn<bool>("whole");
        QTest::addColumn<int>("want");
        // Decode kernel (whole): the decode_attention_bench table at Qwen3-8B (group 4) and 0.6B (group 2) shapes.
        QTest::newRow("batch 1, 256 keys: one block") << 1 << 4 << 8 << 256 << 4096 << true << 1;
        QTest::newRow("batch 1, 255 keys: two splits become one") << 1 << 4 << 8 << 255 << 4096 << true << 1;
        // While the grid fits the SMs once (staged), no split beyond 4 warps x 32 keys.
        QTest::newRow("batch 1, 300 keys: staged, 128 keys a split") << 1 << 4 << 8 << 300 << 4096 << true << 4;
        QTest::newRow("batch 1, 512 keys") << 1 << 4 << 8 << 512 << 4096 << true << 4;
        QTest::newRow("batch 1, 513 keys: staged, 8 splits") << 1 << 4 << 8 << 513 << 4096 << true << 8;
        QTest::newRow("batch 1, 1025 keys, group 2: staged, 16 splits") << 1 << 2 << 8 << 1025 << 4096 << true << 16;
        QTest::newRow("batch 2, 640 keys: 128 blocks, staged") << 2 << 4 << 8 << 640 << 4096 << true << 8;
        QTest::newRow("batch 4, 640 keys: 256 blocks would not be staged") << 4 << 4 << 8 << 640 << 4096 << true << 4;
        QTest::newRow("batch 1, 1024 keys") << 1 << 4 << 8 << 1024 << 4096 << true << 8;
        QTest::newRow("batch 1, 4096 keys: at most 16") << 1 << 4 << 8 << 4096 << 4096 << true << 16;
        QTest::newRow("batch 8, 2048 keys: two waves") << 8 << 4 << 8 << 2048 << 4096 << true << 4;
        QTest::newRow("batch 16, 4096 keys, group 2: four waves") << 16 << 2 << 8 << 4096 << 4096 << true << 4;
        QTest::newRow("batch 32, 2048 keys: one wave already") << 32 << 4 << 8 << 2048 << 4096 << true << 1;
        QTest::newRow("group 32: two row tiles") << 256 << 32 << 2 << 4096 << 4096 << true << 1;
        QTest::newRow("decode kernel within the workspace") << 4 << 4 << 8 << 4096 << 16 << true << 4;
        // Split kernel only (no decode kernel for the shape).
        QTest::newRow("batch 1, 512 keys, split kernel only") << 1 << 4 << 8 << 512 << 4096 << false << 8;
        QTest::newRow("split kernel, batch 1, 4096 keys") << 1 << 4 << 8 << 4096 << 4096 << false << 16;
        QTest::newRow("split kernel, batch 32, 2048 keys") << 32 << 4 << 8 << 2048 << 4096 << false << 8;
        QTest::newRow("split kernel, batch 256, 32k keys: workspace") << 256 << 4 << 8 << 32768 << 4096 << false << 16;
        QTest::newRow("one split does not fit") << 256 << 32 << 2 << 4096 << 256 << false << 1;
    }
    void decode_splits() {
        QFETCH(int, n_seqs);
        QFETCH(int, group);
        QFETCH(int, n_kv);
        QFETCH(int, max_kv);
        QFETCH(int, max_items);
        QFETCH(bool, whole);
        QFETCH(int, want);
        QCOMPARE(decode_attention_splits({n_seqs, group, n_kv, max_kv, 132, max_items, whole}), want);
    }

    // Whole-sequence one-row decode blocks (Llama-7B shapes: 32 KV heads, 132 SMs): the block size of fewer waves x
    // sub-tile rounds, the cases measured on the H200 and the two edges of the rule.
    void decode_block_warps_data() {
        QTest::addColumn<int>("n_seqs");
        QTest::addColumn<int>("max_kv");
        QTest::addColumn<bool>("four");
        QTest::newRow("batch 128 x 560 keys: 6 x 5 against 11 x 3") << 128 << 560 << true;
        QTest::newRow("batch 128 x 1080 keys: 6 x 9 against 11 x 5") << 128 << 1080 << true;
        QTest::newRow("batch 64 x 560 keys: 3 x 5 against 6 x 3") << 64 << 560 << true;
        QTest::newRow("batch 32 x 560 keys: 2 x 5 against 3 x 3") << 32 << 560 << false;
        QTest::newRow("batch 32 x 2100 keys: 2 x 17 against 3 x 9") << 32 << 2100 << false;
        QTest::newRow("batch 16 x 2100 keys: 1 x 17 against 2 x 9") << 16 << 2100 << true;
        QTest::newRow("batch 12 x 560 keys: one wave of 8 warps") << 12 << 560 << false;
        QTest::newRow("batch 128 x 32 keys: one round, 6 waves against 11") << 128 << 32 << true;
        QTest::newRow("batch 1 x 256 keys: one wave, 2 rounds against 1") << 1 << 256 << false;
        QTest::newRow("batch 16 x 256 keys: 1 x 2 against 2 x 1, a tie keeps 8 warps") << 16 << 256 << false;
    }
    void decode_block_warps() {
        QFETCH(int, n_seqs);
        QFETCH(int, max_kv);
        QFETCH(bool, four);
        QCOMPARE(loradesk::kernels::decode_whole_in_4_warps(int64_t(n_seqs) * 32, max_kv, 132), four);
        // The graph planner keys its graphs by the same choice, for MHA models only.
        PlannerConfig mha = config();
        mha.n_kv_heads = 32;
        const ForwardBatch b = make_batch(QList<int>(n_seqs, 1), QList<int>(n_seqs, max_kv), QList<int>(n_seqs, 0));
        LaunchPlan p;
        if (!plan_graph_step(b, mha, limits(), p)) QSKIP("no graph bucket of exactly this batch");
        if (p.bucket == n_seqs) QCOMPARE(p.decode_warps, p.splits == 1 ? (four ? 4 : 8) : 0);
        QCOMPARE(p.max_kv, max_kv);
        QVERIFY(plan_graph_step(b, config(), limits(), p));
        QCOMPARE(p.decode_warps, 0);  // GQA: the block size does not depend on the context
    }

    // The tensor-core decode walk's blocks per SM: the fewest (from 2) that keep the fewest waves.
    void decode_mma_blocks_per_sm_data() {
        QTest::addColumn<int>("blocks");
        QTest::addColumn<int>("most");
        QTest::addColumn<int>("per_sm");
        QTest::newRow("1,024 blocks: 3 waves at 3 against 4 at 2") << 1024 << 3 << 3;
        QTest::newRow("768 blocks: 2 waves against 3") << 768 << 3 << 3;
        QTest::newRow("384 blocks: 1 wave against 2") << 384 << 3 << 3;
        QTest::newRow("512 blocks: 2 waves either way") << 512 << 3 << 2;
        QTest::newRow("256 blocks: one wave either way") << 256 << 3 << 2;
        QTest::newRow("1 block") << 1 << 3 << 2;
        QTest::newRow("1,024 blocks, 4 fit: 2 waves at 4, 3 at 3") << 1024 << 4 << 4;
        QTest::newRow("700 blocks, 4 fit: 2 waves at 3 and 4, 3 at 2") << 700 << 4 << 3;
        QTest::newRow("2 fit at most") << 1024 << 2 << 2;
        QTest::newRow("1 fits at most") << 1024 << 1 << 1;
    }
    void decode_mma_blocks_per_sm() {
        QFETCH(int, blocks);
        QFETCH(int, most);
        QFETCH(int, per_sm);
        QCOMPARE(loradesk::kernels::decode_mma_blocks_per_sm(blocks, 132, most), per_sm);
    }

    void graph_bucket_data() {
        QTest::addColumn<int>("n_seqs");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("logits");
        QTest::addColumn<int>("want");
        QTest::newRow("1") << 1 << 256 << 256 << 1;
        QTest::newRow("3 -> 4") << 3 << 256 << 256 << 4;
        QTest::newRow("4 (edge)") << 4 << 256 << 256 << 4;
        QTest::newRow("5 -> 8") << 5 << 256 << 256 << 8;
        QTest::newRow("33 -> 48") << 33 << 256 << 256 << 48;
        QTest::newRow("65 -> 96") << 65 << 256 << 256 << 96;
        QTest::newRow("129 -> 160") << 129 << 256 << 256 << 160;
        QTest::newRow("200 -> 224") << 200 << 256 << 256 << 224;
        QTest::newRow("225 -> 256") << 225 << 256 << 256 << 256;
        QTest::newRow("256 (last)") << 256 << 256 << 256 << 256;
        QTest::newRow("129 beyond a 150-token workspace") << 129 << 150 << 256 << 0;
        QTest::newRow("257: none") << 257 << 512 << 512 << 0;
        QTest::newRow("beyond the token workspace") << 9 << 8 << 256 << 0;
        QTest::newRow("beyond the logits rows") << 5 << 64 << 4 << 0;
        QTest::newRow("workspace edge") << 3 << 4 << 4 << 4;
    }
    void graph_bucket() {
        QFETCH(int, n_seqs);
        QFETCH(int, tokens);
        QFETCH(int, logits);
        QFETCH(int, want);
        QCOMPARE(cuda::graph_bucket(n_seqs, {tokens, logits, 4096, 1 << 20}), want);
    }

    void graph_step_data() {
        QTest::addColumn<QList<int>>("lora_slots");
        QTest::addColumn<QList<int>>("kv_len");
        QTest::addColumn<int>("bucket");
        QTest::addColumn<int>("seg_cap");
        QTest::addColumn<int>("splits");
        QTest::addColumn<QList<int>>("want_indptr");
        QTest::addColumn<QList<int>>("want_slot");
        QTest::newRow("base rows, 3 -> 4") << QList<int>{0, 0, 0} << QList<int>{5, 17, 40} << 4 << 1 << 1
                                           << QList<int>{0, 1, 2, 3, 4} << QList<int>{0, 0, 0, 0};
        QTest::newRow("neighbours share an adapter") << QList<int>{1, 1, 2} << QList<int>{5, 17, 40} << 4 << 4 << 1
                                                     << QList<int>{0, 2, 3, 4, 4} << QList<int>{1, 2, 0, 0};
        QTest::newRow("all adapters differ, bucket edge") << QList<int>{1, 2, 3, 0} << QList<int>{1, 2, 3, 4} << 4 << 1
                                                          << 1 << QList<int>{0, 1, 2, 3, 4} << QList<int>{1, 2, 3, 0};
        QTest::newRow("5 -> 8, segments cut at 4")
            << QList<int>{2, 2, 2, 2, 2} << QList<int>{9, 9, 9, 9, 9} << 8 << 4 << 1
            << QList<int>{0, 4, 5, 6, 7, 8, 8, 8, 8} << QList<int>{2, 2, 0, 0, 0, 0, 0, 0};
        QTest::newRow("long context splits")
            << QList<int>{0} << QList<int>{4096} << 1 << 1 << 16 << QList<int>{0, 1} << QList<int>{0};
    }
    void graph_step() {
        QFETCH(QList<int>, lora_slots);
        QFETCH(QList<int>, kv_len);
        QFETCH(int, bucket);
        QFETCH(int, seg_cap);
        QFETCH(int, splits);
        QFETCH(QList<int>, want_indptr);
        QFETCH(QList<int>, want_slot);
        const ForwardBatch b = make_batch(QList<int>(lora_slots.size(), 1), kv_len, lora_slots);
        LaunchPlan p;
        QVERIFY(plan_graph_step(b, config(), limits(), p));
        QVERIFY(p.graph);
        QCOMPARE(p.bucket, bucket);
        QCOMPARE(p.seg_cap, seg_cap);
        QCOMPARE(p.splits, splits);
        const StepShape& sh = p.shape;
        QCOMPARE(sh.n, bucket);
        QCOMPARE(sh.n_segs, bucket);
        QCOMPARE(sh.max_seg_len, seg_cap);
        QCOMPARE(sh.n_items, bucket * splits);  // group 4: one row tile per sequence
        QCOMPARE(sh.n_groups, bucket);
        QCOMPARE(sh.n_tiles, 0);
        QCOMPARE(sh.any_lora, std::any_of(lora_slots.begin(), lora_slots.end(), [](int s) { return s > 0; }));
        QVERIFY(sh.split_decode_only);
        check_rows(p, b);
        const MetaLayout& L = p.layout;
        QCOMPARE(L.items, std::size_t((9 * bucket + 3 + 3) / 4 * 4));  // the layout depends on the bucket only
        QCOMPARE(slice(p, L.seg_indptr, std::size_t(bucket) + 1), want_indptr);
        QCOMPARE(slice(p, L.seg_slot, std::size_t(bucket)), want_slot);
        for (int r = lora_slots.size(); r < bucket; ++r) {  // pad rows: one token in one scratch page
            QCOMPARE(p.meta[L.kv_slots + std::size_t(r)], kScratchPage * kPageSize);
            QCOMPARE(p.meta[L.qo + std::size_t(r) + 1], r + 1);
            QCOMPARE(p.meta[L.kv_indptr + std::size_t(r) + 1] - p.meta[L.kv_indptr + std::size_t(r)], 1);
            QCOMPARE(p.meta[L.last + std::size_t(r)], 1);
            QCOMPARE(p.meta[L.logits + std::size_t(r)], r);
            QCOMPARE(p.meta[L.kv_indices + b.kv_indices.size() + std::size_t(r - lora_slots.size())], kScratchPage);
        }
    }

    void graph_step_declines_data() {
        QTest::addColumn<QList<int>>("n_new");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("meta");
        QTest::addColumn<int>("att_items");
        QTest::newRow("a prefill row") << QList<int>{1, 2} << 256 << (1 << 20) << 4096;
        QTest::newRow("a row without logits") << QList<int>{1, 0, 1} << 256 << (1 << 20) << 4096;
        QTest::newRow("no bucket fits the workspace") << QList<int>(9, 1) << 8 << (1 << 20) << 4096;
        QTest::newRow("page tables beyond the metadata") << QList<int>{1, 1} << 256 << 40 << 4096;
        QTest::newRow("attention items beyond the workspace") << QList<int>{1, 1} << 256 << (1 << 20) << 1;
        QTest::newRow("empty batch") << QList<int>{} << 256 << (1 << 20) << 4096;
    }
    void graph_step_declines() {
        QFETCH(QList<int>, n_new);
        QFETCH(int, tokens);
        QFETCH(int, meta);
        QFETCH(int, att_items);
        QList<int> kv, lora_slots;
        for (int i = 0; i < n_new.size(); ++i) kv << 40, lora_slots << 0;
        LaunchPlan p;
        QVERIFY(!plan_graph_step(make_batch(n_new, kv, lora_slots), config(), limits(tokens, meta, att_items), p));
        QVERIFY(!p.graph);
    }

    // Each row is a measured choice (quant_route.h): which kernel a quantized site tries first and second, and
    // whether quant_mma fuses the adapter's expand.
    void quant_route_data() {
        QTest::addColumn<bool>("fp8");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<bool>("lora");
        QTest::addColumn<int>("first");  // 0 gemv, 1 mma
        QTest::addColumn<bool>("mma_fuses");
        const int gemv = int(QuantKernel::gemv), mma = int(QuantKernel::mma);
        QTest::newRow("int4 1 token") << false << 1 << false << mma << false;
        QTest::newRow("int4 1 token + adapter: shrink and expand in quant_mma") << false << 1 << true << mma << true;
        QTest::newRow("int4 2 tokens + adapters: fused in quant_mma") << false << 2 << true << mma << true;
        QTest::newRow("int4 3 tokens + adapters: shrink beside, SGMV expand after")
            << false << 3 << true << mma << false;
        QTest::newRow("int4 4 tokens + adapters: shrink beside, SGMV expand after")
            << false << 4 << true << mma << false;
        QTest::newRow("int4 5 tokens + adapters: SGMV after") << false << 5 << true << mma << false;
        QTest::newRow("int4 8 tokens + adapters: SGMV after") << false << 8 << true << mma << false;
        QTest::newRow("int4 64 tokens") << false << 64 << false << mma << false;
        QTest::newRow("fp8 1 token") << true << 1 << false << gemv << false;
        QTest::newRow("fp8 1 token + adapter: the GEMV, shrink in its launch") << true << 1 << true << gemv << true;
        QTest::newRow("fp8 2 tokens: the GEMV") << true << 2 << false << gemv << false;
        QTest::newRow("fp8 2 tokens + adapters: fused in quant_mma") << true << 2 << true << mma << true;
        QTest::newRow("fp8 3 tokens: quant_mma") << true << 3 << false << mma << false;
        QTest::newRow("fp8 4 tokens: quant_mma") << true << 4 << false << mma << false;
        QTest::newRow("fp8 4 tokens + adapters: SGMV after") << true << 4 << true << mma << false;
        QTest::newRow("fp8 8 tokens + adapters: SGMV after") << true << 8 << true << mma << false;
        QTest::newRow("fp8 32 tokens") << true << 32 << false << mma << false;
    }
    void quant_route() {
        QFETCH(bool, fp8);
        QFETCH(int, tokens);
        QFETCH(bool, lora);
        QFETCH(int, first);
        QFETCH(bool, mma_fuses);
        const QuantRoute r = route_quant_site(fp8, tokens, lora);
        QCOMPARE(int(r[0].kernel), first);
        QVERIFY(r[0].kernel != r[1].kernel);  // both kernels are tried: each refuses shapes the other takes
        const QuantAttempt& m = r[0].kernel == QuantKernel::mma ? r[0] : r[1];
        QCOMPARE(m.fuse_lora, mma_fuses);
        QVERIFY(!m.fuse_lora || lora);
        QCOMPARE(m.fuse_shrink, mma_fuses);  // every fused route runs the shrink inside the launch too
        const QuantAttempt& g = r[0].kernel == QuantKernel::gemv ? r[0] : r[1];
        QVERIFY(g.fuses_lora());                              // the GEMV always fuses the expand
        QCOMPARE(g.fuse_shrink, fp8 && lora && tokens == 1);  // and the shrink where it has shrink blocks

        // LoRA around the kernels (CudaRunnerOptions::quant_lora_delta): the route of a step without adapters, and
        // no attempt fuses any of the adapter's work, the GEMV's expand included.
        const QuantRoute around = route_quant_site(fp8, tokens, lora, true);
        const QuantRoute base = route_quant_site(fp8, tokens, false);
        for (std::size_t i = 0; i < around.size(); ++i) {
            QCOMPARE(int(around[i].kernel), int(base[i].kernel));
            QVERIFY(around[i].lora_around);
            QVERIFY(!around[i].fuses_lora());
            QVERIFY(!around[i].fuse_lora && !around[i].fuse_shrink);
        }
    }

    // Which fp8 sites take the W8A8 route (x rounded to e4m3, cuBLASLt's fp8 GEMM) before cuBLASLt is asked about
    // their shapes: block-scaled weights from 3 tokens (2 stay on the GEMV: 4.70 ms per step against 5.18).
    void fp8_w8a8_route_rule() {
        QVERIFY(!fp8_w8a8_route(true, 1));
        QVERIFY(!fp8_w8a8_route(true, 2));
        QCOMPARE(kFp8GemmMinTokens, 3);
        for (int tokens : {3, 4, 32, 64, 2048}) QVERIFY(fp8_w8a8_route(true, tokens));
        QCOMPARE(kFp8ChannelGemmMinTokens, 16);  // per-channel: x quantized per whole token
        for (int tokens : {1, 3, 8, 15}) QVERIFY(!fp8_w8a8_route(false, tokens));
        for (int tokens : {16, 32, 64, 2048}) QVERIFY(fp8_w8a8_route(false, tokens));
    }

    void eager_step_data() {
        QTest::addColumn<QList<int>>("n_new");
        QTest::addColumn<QList<int>>("kv_len");
        QTest::addColumn<QList<int>>("lora_slots");
        QTest::addColumn<bool>("prefill_kernel");
        QTest::addColumn<QList<int>>("want_indptr");
        QTest::addColumn<QList<int>>("want_slot");
        QTest::addColumn<bool>("want_tiles");
        QTest::addColumn<bool>("decode_only");
        QTest::newRow("prefill + decode, mixed adapters")
            << QList<int>{20, 1, 1, 3} << QList<int>{20, 33, 5, 10} << QList<int>{1, 1, 2, 0} << true
            << QList<int>{0, 21, 22, 25} << QList<int>{1, 2, 0} << true << false;
        QTest::newRow("prefill on the split kernels") << QList<int>{20, 1} << QList<int>{50, 33} << QList<int>{0, 0}
                                                      << false << QList<int>{0, 21} << QList<int>{0} << false << false;
        QTest::newRow("decode rows eagerly") << QList<int>{1, 1, 1} << QList<int>{5, 9, 2000} << QList<int>{3, 0, 0}
                                             << true << QList<int>{0, 1, 3} << QList<int>{3, 0} << false << true;
        QTest::newRow("prefill tiles and decode rows")
            << QList<int>{64, 1} << QList<int>{100, 7} << QList<int>{0, 4} << true << QList<int>{0, 64, 65}
            << QList<int>{0, 4} << true << true;
    }
    void eager_step() {
        QFETCH(QList<int>, n_new);
        QFETCH(QList<int>, kv_len);
        QFETCH(QList<int>, lora_slots);
        QFETCH(bool, prefill_kernel);
        QFETCH(QList<int>, want_indptr);
        QFETCH(QList<int>, want_slot);
        QFETCH(bool, want_tiles);
        QFETCH(bool, decode_only);
        const ForwardBatch b = make_batch(n_new, kv_len, lora_slots);
        LaunchPlan p;
        plan_graph_step(make_batch({1}, {3}, {0}), config(), limits(), p);  // a stale graph plan is overwritten
        plan_eager_step(b, config(prefill_kernel), limits(), p);
        QVERIFY(!p.graph);
        const StepShape& sh = p.shape;
        QCOMPARE(sh.n, b.n_tokens());
        QCOMPARE(sh.n_seqs, b.n_seqs());
        QCOMPARE(sh.n_logits, int(b.logits_indices.size()));
        QCOMPARE(sh.any_lora, std::any_of(lora_slots.begin(), lora_slots.end(), [](int s) { return s > 0; }));
        QCOMPARE(sh.n_tiles > 0, want_tiles);
        QCOMPARE(sh.split_decode_only, decode_only);
        QCOMPARE(slice(p, p.layout.seg_indptr, std::size_t(sh.n_segs) + 1), want_indptr);
        QCOMPARE(slice(p, p.layout.seg_slot, std::size_t(sh.n_segs)), want_slot);
        int longest = 0;
        for (int i = 1; i < want_indptr.size(); ++i) longest = std::max(longest, want_indptr[i] - want_indptr[i - 1]);
        QCOMPARE(sh.max_seg_len, longest);
        QCOMPARE(p.layout.total, p.layout.kv_indices + b.kv_indices.size());
        check_rows(p, b);
    }

    // A graph bakes the StepMeta of the plan it was captured from; every later plan replayed through it (same
    // key) must put each array at the same offset with the same shape, whatever the batch's sequences, contexts
    // and page tables. Plans go into one reused LaunchPlan between eager plans, as in the runner, and must
    // equal plans made from scratch (nothing left over from the previous step).
    void graph_plans_of_one_key_share_their_layout() {
        std::mt19937 rng(3);
        LaunchPlan reused;
        using Key = std::tuple<int, bool, int, int, int>;
        std::map<Key, LaunchPlan> captured;
        int replays = 0;
        for (int step = 0; step < 3000; ++step) {
            const int n = 1 + int(rng() % 40);
            QList<int> n_new, kv, seq_slots;
            for (int s = 0; s < n; ++s) {
                n_new << 1, kv << 1 + int(rng() % (rng() % 4 == 0 ? 3000 : 120)), seq_slots << int(rng() % 4);
            }
            std::sort(seq_slots.begin(), seq_slots.end());
            if (step % 3 == 0) {  // an eager step (prefill rows, long page tables) in between
                QList<int> e_new = n_new, e_kv = kv;
                for (int s = 0; s < n; s += 2) e_new[s] = 1 + int(rng() % 60), e_kv[s] += e_new[s];
                plan_eager_step(make_batch(e_new, e_kv, seq_slots), config(), limits(), reused);
            }
            const ForwardBatch b = make_batch(n_new, kv, seq_slots);
            LaunchPlan fresh;
            QVERIFY(plan_graph_step(b, config(), limits(), fresh));
            QVERIFY(plan_graph_step(b, config(), limits(), reused));
            QCOMPARE(list(reused.meta), list(fresh.meta));
            QVERIFY(reused.layout == fresh.layout);
            QVERIFY(reused.shape == fresh.shape);
            check_rows(reused, b);
            const Key key{reused.bucket, reused.shape.any_lora, reused.splits, reused.seg_cap, reused.decode_warps};
            auto [it, first] = captured.try_emplace(key, reused);
            if (first) continue;
            ++replays;
            const LaunchPlan& cap = it->second;
            MetaLayout a = cap.layout, r = reused.layout;
            a.total = r.total = 0;  // only the page tables' length (the block's end) may change
            QVERIFY2(a == r, qPrintable(QString("step %1").arg(step)));
            QVERIFY(cap.shape == reused.shape);
            const int32_t* base = reinterpret_cast<const int32_t*>(std::uintptr_t(1) << 20);
            const StepMeta sc = bind_step_meta(cap, base), sr = bind_step_meta(reused, base);
            QVERIFY(sc.token_ids == sr.token_ids && sc.positions == sr.positions && sc.kv_slots == sr.kv_slots &&
                    sc.qo_indptr == sr.qo_indptr && sc.kv_indptr == sr.kv_indptr && sc.kv_indices == sr.kv_indices &&
                    sc.last_len == sr.last_len && sc.seg_indptr == sr.seg_indptr && sc.seg_slot == sr.seg_slot &&
                    sc.logits_idx == sr.logits_idx && sc.items == sr.items && sc.groups == sr.groups &&
                    sc.tiles == sr.tiles);
        }
        QVERIFY(captured.size() >= 20);
        QVERIFY(replays > 2000);
    }

    // Within the attention workspace, coarser split-K chunks: 2,000 keys are 8 items at 256 keys, 1 at 2,048.
    void eager_step_coarsens_chunks() {
        const ForwardBatch b = make_batch({1}, {2000}, {0});
        LaunchPlan p;
        plan_eager_step(b, config(), limits(), p);
        QCOMPARE(p.shape.n_items, 8);
        plan_eager_step(b, config(), limits(256, 1 << 20, 1), p);
        QCOMPARE(p.shape.n_items, 1);
        check_rows(p, b);
    }
};

QTEST_GUILESS_MAIN(TstStepPlan)
#include "tst_step_plan.moc"
