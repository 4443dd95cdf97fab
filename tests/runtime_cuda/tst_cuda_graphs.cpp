// Decode graphs of the CUDA runner against its eager steps across bucket boundaries, base-only and LoRA batches,
// and slot reloads between replays; and a step's logits bit-identical whatever the runner ran before (graphs
// captured with other data, stale metadata). Label cuda: needs a GPU.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_runner_checks.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::runtime;
using namespace loradesk::runtime::testing;

class TstCudaGraphs : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        if (!cuda::cuda_device_available()) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    // Decode graphs against eager steps of the same runner type: batch sizes on and across bucket edges
    // (padding rows), base-only and LoRA batches, and a slot reloaded between replays (a graph holds
    // pointers, so it must see the new weights and ranks; a third runner that keeps the old adapter proves
    // the reload changed the logits by far more than the tolerance).
    void graphs_match_eager() {
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth_tiny(model_dir, 11);
        cuda::CudaRunner g(model_dir), e(model_dir), stale(model_dir);
        e.set_cuda_graphs(false);
        stale.set_cuda_graphs(false);
        const int page_size = 16, n_pages = 256, n_seqs = 40;
        std::vector<SequenceDriver> drivers;
        drivers.reserve(3);
        for (cuda::CudaRunner* r : {&g, &e, &stale}) {
            r->configure_lora_slots(3, 16);
            r->load_lora_slot(1, random_lora(c, 8, 1));
            r->load_lora_slot(2, random_lora(c, 16, 2));
            r->load_lora_slot(3, random_lora(c, 4, 3));
            drivers.emplace_back(*r, n_pages, page_size);
        }
        // Sequences ordered by slot: 12 base, 10 on slot 1, 10 on slot 2, 8 on slot 3.
        std::mt19937 rng(4);
        std::vector<int> slot_of;
        std::vector<int32_t> next(n_seqs);
        std::vector<SequenceDriver::Work> prefill;
        for (int i = 0; i < n_seqs; ++i) {
            slot_of.push_back(i < 12 ? 0 : i < 22 ? 1 : i < 32 ? 2 : 3);
            for (auto& d : drivers) QCOMPARE(d.add_sequence(slot_of.back()), i);
            std::vector<int32_t> toks(1 + rng() % 40);
            for (auto& t : toks) t = int32_t(rng() % uint32_t(c.vocab_size));
            prefill.push_back({i, toks});
        }
        std::vector<float> lg, le, ls;
        drivers[0].step(prefill, false, lg);
        drivers[1].step(prefill, false, le);
        drivers[2].step(prefill, false, ls);
        QVERIFY(rel_l2(lg, le) < 1e-6);  // prefill is eager on both: identical kernels, identical results
        auto take_next = [&](const std::vector<SequenceDriver::Work>& w, const std::vector<float>& logits) {
            for (std::size_t i = 0; i < w.size(); ++i) {
                auto row = logits.begin() + std::ptrdiff_t(i) * c.vocab_size;
                next[std::size_t(w[i].seq)] = int32_t(std::max_element(row, row + c.vocab_size) - row);
            }
        };
        take_next(prefill, le);
        // (first sequence, count): base-only buckets 1..16 with padding, LoRA-only, mixed across 17..40.
        const std::vector<std::pair<int, int>> steps{{0, 1},  {0, 2},  {0, 3},  {0, 4},  {0, 5},  {0, 8},
                                                     {0, 9},  {0, 12}, {12, 1}, {12, 3}, {22, 9}, {0, 16},
                                                     {0, 17}, {5, 30}, {0, 33}, {0, 40}, {0, 40}, {12, 20}};
        for (std::size_t k = 0; k < steps.size(); ++k) {
            const bool reload = k == 14;
            if (reload)
                for (cuda::CudaRunner* r : {&g, &e}) r->load_lora_slot(2, random_lora(c, 12, 7));
            std::vector<SequenceDriver::Work> w;
            for (int i = steps[k].first; i < steps[k].first + steps[k].second; ++i)
                w.push_back({i, {next[std::size_t(i)]}});
            drivers[0].step(w, false, lg);
            drivers[1].step(w, false, le);
            drivers[2].step(w, false, ls);
            const double err = rel_l2(lg, le);
            qInfo("step %zu: %d sequences from %d, graph vs eager rel-L2 %.2e", k, steps[k].second, steps[k].first,
                  err);
            QVERIFY2(err < 1e-2, qPrintable(QString("step %1: graph vs eager rel err %2").arg(k).arg(err)));
            QCOMPARE(argmax_disagreements(lg, le, c.vocab_size), 0);
            if (k >= 14) {  // rows on slot 2 must follow the new adapter, not the old one
                std::vector<float> g2, s2, e2;
                for (std::size_t i = 0; i < w.size(); ++i)
                    if (slot_of[std::size_t(w[i].seq)] == 2) {
                        auto at = std::ptrdiff_t(i) * c.vocab_size;
                        g2.insert(g2.end(), lg.begin() + at, lg.begin() + at + c.vocab_size);
                        s2.insert(s2.end(), ls.begin() + at, ls.begin() + at + c.vocab_size);
                    }
                QVERIFY(!g2.empty());
                QVERIFY2(rel_l2(g2, s2) > 5e-2, "the slot reload did not change the replayed logits");
            }
            take_next(w, le);
        }
        const auto gs = g.graph_stats();
        QCOMPARE(gs.replays, int64_t(steps.size()));
        QVERIFY(gs.captures >= 7 && gs.captures < int64_t(steps.size()));  // buckets 1..48 x variants, reused
        QCOMPARE(e.graph_stats().replays, 0);
        QCOMPARE(gs.workspace_grows, 0);
    }

    // A step's logits depend on its batch only, bit for bit, never on what the runner ran before: two runners
    // get the same scheduler-like schedule (prefills joining decode batches as eager steps, graph replays
    // whose bucket, LoRA mix and segment cap change, down to the one- and two-token fused-LoRA path), but
    // `used` first runs the schedule on other sequences (capturing the graphs with their data) and an eager
    // step with a larger metadata block, so its stale metadata, workspace and pages all differ.
    void steps_do_not_depend_on_history() {
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth_tiny(model_dir, 13);
        cuda::CudaRunner fresh(model_dir), used(model_dir);
        std::vector<SequenceDriver> drivers;
        drivers.reserve(2);
        for (cuda::CudaRunner* r : {&fresh, &used}) {
            r->configure_lora_slots(2, 16);
            r->load_lora_slot(1, random_lora(c, 8, 1));
            r->load_lora_slot(2, random_lora(c, 16, 2));
            drivers.emplace_back(*r, 512, 16);
        }
        std::mt19937 rng(21);
        auto prompt = [&](int n) {
            std::vector<int32_t> t(static_cast<std::size_t>(n));
            for (auto& v : t) v = int32_t(rng() % uint32_t(c.vocab_size));
            return t;
        };
        // Sequences 0..11 and 12..13 run on `used` only, 14..25 on both; four per slot in each group of 12.
        std::vector<int> seq_slot;
        for (int g = 0; g < 2; ++g) {
            for (int i = 0; i < 12; ++i) seq_slot.push_back(i / 4);
            if (g == 0) seq_slot.insert(seq_slot.end(), {1, 2});
        }
        for (std::size_t i = 0; i < seq_slot.size(); ++i)
            for (auto& d : drivers) QCOMPARE(d.add_sequence(seq_slot[i]), int(i));
        std::vector<int32_t> next(seq_slot.size(), 1);
        std::vector<std::vector<int32_t>> prompts(seq_slot.size());
        for (int i = 0; i < 12; ++i) {  // the same lengths (so the same graph keys), other tokens
            const int n = 1 + int(rng() % 60);
            prompts[std::size_t(i)] = prompt(n), prompts[std::size_t(i + 14)] = prompt(n);
        }
        auto work = [&](int first, const std::vector<int>& decode, const std::vector<int>& prefill) {
            std::vector<SequenceDriver::Work> w;  // by slot, as the scheduler orders them
            for (int slot = 0; slot <= 2; ++slot) {
                for (int s : decode)
                    if (seq_slot[std::size_t(first + s)] == slot)
                        w.push_back({first + s, {next[std::size_t(first + s)]}});
                for (int s : prefill)
                    if (seq_slot[std::size_t(first + s)] == slot)
                        w.push_back({first + s, prompts[std::size_t(first + s)]});
            }
            return w;
        };
        auto take_next = [&](const std::vector<SequenceDriver::Work>& w, const std::vector<float>& logits) {
            for (std::size_t i = 0; i < w.size(); ++i) {
                auto row = logits.begin() + std::ptrdiff_t(i) * c.vocab_size;
                next[std::size_t(w[i].seq)] = int32_t(std::max_element(row, row + c.vocab_size) - row);
            }
        };
        const std::vector<int> base{0, 1, 2, 3}, one{4, 5, 6, 7}, two{8, 9, 10, 11};
        const std::vector<int> base_one{0, 1, 2, 3, 4, 5, 6, 7}, all{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        const std::vector<std::pair<std::vector<int>, std::vector<int>>> schedule{
            {{}, base},      {base, {}}, {base, {}}, {base, one}, {base_one, {}},         {base_one, {}},
            {base_one, two}, {all, {}},  {all, {}},  {all, {}},   {{0, 1, 8, 9, 10}, {}}, {{0, 4, 8}, {}},
            {{0, 8}, {}},    {{4}, {}},  {all, {}}};
        std::vector<float> scratch;
        {  // the history of `used`: a large eager step, then the schedule on sequences 0..11
            std::vector<SequenceDriver::Work> w{{12, prompt(700)}, {13, prompt(900)}};
            drivers[1].step(w, false, scratch);
            for (const auto& [decode, prefill] : schedule) {
                w = work(0, decode, prefill);
                drivers[1].step(w, false, scratch);
                take_next(w, scratch);
            }
        }
        const int64_t used_captures = used.graph_stats().captures;
        std::vector<float> la, lb;
        for (std::size_t k = 0; k < schedule.size(); ++k) {
            const auto w = work(14, schedule[k].first, schedule[k].second);
            drivers[0].step(w, false, la);
            drivers[1].step(w, false, lb);
            QCOMPARE(lb.size(), la.size());
            int rows = 0;
            for (std::size_t i = 0; i < w.size(); ++i)
                rows +=
                    std::memcmp(la.data() + i * std::size_t(c.vocab_size), lb.data() + i * std::size_t(c.vocab_size),
                                std::size_t(c.vocab_size) * sizeof(float)) != 0;
            QVERIFY2(rows == 0, qPrintable(QString("step %1 (%2 sequences): %3 rows differ from the fresh runner's")
                                               .arg(k)
                                               .arg(w.size())
                                               .arg(rows)));
            take_next(w, la);
        }
        qInfo("fresh: %lld captures, %lld replays; used: %lld captures in its history, %lld after",
              (long long)fresh.graph_stats().captures, (long long)fresh.graph_stats().replays, (long long)used_captures,
              (long long)used.graph_stats().captures);
        QVERIFY(fresh.graph_stats().replays >= 8);
    }
};

QTEST_GUILESS_MAIN(TstCudaGraphs)
#include "tst_cuda_graphs.moc"
