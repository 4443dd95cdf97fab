// Whole-model correctness of the CUDA runner against the CPU reference runner on synthesized checkpoints of
// all four architectures (Qwen3 q/k norm, Qwen2 qkv bias, Llama 3 rope scaling, Mistral): logits of a mixed
// prefill (prompts over cached pages, three LoRA slots of odd ranks and base rows in one batch), then
// greedy decode steps fed the CPU's tokens (decode replays CUDA graphs, or runs eagerly, per data row); the
// quantized checkpoints and the W8A8 route; identical rows, the device argmax and bad adapters. Decode graphs
// against eager steps are in tst_cuda_graphs, the LoRA side stream in tst_cuda_lora_streams. Label cuda.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "cuda_runner_checks.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/cuda/quant_route.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::runtime;
using namespace loradesk::runtime::testing;

namespace {

// The weight-only kernels for fp8 at every token count: the tests against the weight-only CPU oracle use it, and
// fp8_w8a8_matches_cpu_runner covers the W8A8 route (on per-channel fp8 it takes even tiny's widths).
cuda::CudaRunnerOptions weight_only_fp8() {
    cuda::CudaRunnerOptions o;
    o.fp8_w8a8 = false;
    return o;
}

// Like argmax_disagreements, but a lead counts as clear only when it also exceeds 6 times the row's own
// rms logit error: quantized rows carry an fp8/int4 weight rounded once more to bf16 on either side of the
// comparison, and a flip inside that measured noise is numerics, not a wrong kernel.
int argmax_disagreements_beyond_noise(const std::vector<float>& gpu, const std::vector<float>& cpu, int vocab) {
    int bad = 0;
    for (std::size_t r = 0; r < cpu.size() / vocab; ++r) {
        auto row = cpu.begin() + std::ptrdiff_t(r * vocab);
        auto grow = gpu.begin() + std::ptrdiff_t(r * vocab);
        double se = 0;
        for (int i = 0; i < vocab; ++i) se += double(grow[i] - row[i]) * (grow[i] - row[i]);
        const double rms = std::sqrt(se / vocab);
        std::vector<float> sorted(row, row + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        const int c = int(std::max_element(row, row + vocab) - row);
        const int g = int(std::max_element(grow, grow + vocab) - grow);
        const double lead = sorted[0] - sorted[1];
        if (c != g && lead > 0.02f * std::max(1.0f, std::fabs(sorted[0])) && lead > 6 * rms) ++bad;
    }
    return bad;
}

}  // namespace

class TstCudaRunner : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        if (!cuda::cuda_device_available()) QFAIL("no CUDA device: run this test on the GPU machine");
    }

    void matches_cpu_runner_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<bool>("graphs");
        QTest::addColumn<QString>("quant");
        for (const char* p : {"tiny", "tiny-qwen2", "tiny-llama", "tiny-mistral"}) {
            QTest::newRow(p) << QString(p) << true << QString();
            QTest::newRow(qPrintable(QString(p) + "-eager")) << QString(p) << false << QString();
        }
        // Quantized checkpoints: the CUDA runner keeps them packed (a prefill of over 64 tokens runs the
        // dequantize-then-cuBLAS path), the CPU runner dequantizes to f32.
        for (const std::string& q : model::synth_quant_names())
            QTest::newRow(qPrintable(QString("tiny-") + q.c_str())) << QString("tiny") << true << QString(q.c_str());
    }

    void matches_cpu_runner() {
        QFETCH(QString, preset);
        QFETCH(bool, graphs);
        QFETCH(QString, quant);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, preset, 5, quant);
        cpu::CpuRunner cpu_runner(model_dir, 2);
        cuda::CudaRunner gpu(model_dir, 0, weight_only_fp8());
        gpu.set_cuda_graphs(graphs);
        QCOMPARE(gpu.config().vocab_size, c.vocab_size);

        const int page_size = 16, n_pages = 64;
        std::vector<int32_t> order(n_pages);
        for (int i = 0; i < n_pages; ++i) order[std::size_t(i)] = (i * 37) % n_pages;  // scattered pages
        for (ModelRunner* r : {static_cast<ModelRunner*>(&cpu_runner), static_cast<ModelRunner*>(&gpu)}) {
            r->configure_lora_slots(3, 16);
            // Slot 3 first holds a full-rank adapter: uploads copy only the rows a rank uses, so the rank-7
            // adapter that replaces it leaves stale rows 7..15 on the device, which must stay unread.
            r->load_lora_slot(3, random_lora(c, 16, 4));
            r->load_lora_slot(1, random_lora(c, 3, 1));
            r->load_lora_slot(2, random_lora(c, 16, 2));
            r->load_lora_slot(3, random_lora(c, 7, 3));
        }
        SequenceDriver dc(cpu_runner, n_pages, page_size, order);
        SequenceDriver dg(gpu, n_pages, page_size, order);
        const std::vector<int> seq_slots{0, 1, 1, 2, 3};
        const std::vector<int> lens{37, 1, 19, 5, 70};
        std::vector<SequenceDriver::Work> work;
        std::mt19937 rng(9);
        for (std::size_t i = 0; i < seq_slots.size(); ++i) {
            const int a = dc.add_sequence(seq_slots[i]);
            QCOMPARE(dg.add_sequence(seq_slots[i]), a);
            std::vector<int32_t> toks(std::size_t(lens[i]));
            for (auto& t : toks) t = int32_t(rng() % uint32_t(c.vocab_size));
            work.push_back({a, toks});
        }
        // Prefill in two chunks so that the second one attends to cached pages.
        std::vector<float> lc, lg;
        for (int chunk = 0; chunk < 2; ++chunk) {
            std::vector<SequenceDriver::Work> part;
            for (const auto& w : work) {
                std::size_t half = (w.tokens.size() + 1) / 2;
                std::vector<int32_t> t = chunk == 0 ? std::vector<int32_t>(w.tokens.begin(), w.tokens.begin() + half)
                                                    : std::vector<int32_t>(w.tokens.begin() + half, w.tokens.end());
                if (!t.empty()) part.push_back({w.seq, t});
            }
            dc.step(part, true, lc);
            dg.step(part, true, lg);
            QCOMPARE(lg.size(), lc.size());
            double err = rel_l2(lg, lc);
            qInfo("%s prefill chunk %d: %zu rows, logits rel-L2 %.2e", qPrintable(preset), chunk,
                  lc.size() / c.vocab_size, err);
            QVERIFY2(err < 3e-2, qPrintable(QString("prefill logits rel err %1").arg(err)));
            // Quantized rows: the GPU's kernels round each weight to bf16 (quant_mma twice: the scale, then the
            // product), the CPU keeps f32; a flip inside that noise is numerics (argmax_disagreements_beyond_noise).
            const int flips = argmax_disagreements(lg, lc, c.vocab_size);
            if (flips) qInfo("%d argmax flips with a clear lead", flips);
            QCOMPARE(quant.isEmpty() ? flips : argmax_disagreements_beyond_noise(lg, lc, c.vocab_size), 0);
        }
        // Greedy decode: both runners get the CPU's tokens, so any divergence shows in the logits.
        std::vector<float> last_c(lc.end() - std::ptrdiff_t(work.size()) * c.vocab_size, lc.end());
        int total_bad = 0;
        for (int step = 0; step < 12; ++step) {
            for (std::size_t i = 0; i < work.size(); ++i) {
                auto row = last_c.begin() + std::ptrdiff_t(i) * c.vocab_size;
                work[i].tokens = {int32_t(std::max_element(row, row + c.vocab_size) - row)};
            }
            dc.step(work, false, lc);
            dg.step(work, false, lg);
            double err = rel_l2(lg, lc);
            QVERIFY2(err < 3e-2, qPrintable(QString("decode step %1 logits rel err %2").arg(step).arg(err)));
            total_bad += argmax_disagreements(lg, lc, c.vocab_size);
            last_c = lc;
        }
        QCOMPARE(total_bad, 0);
        QCOMPARE(gpu.graph_stats().replays, graphs ? 12 : 0);  // every decode step was (or was not) a replay
        auto mem = gpu.memory();                               // the pool holds one scratch page for graph padding
        QVERIFY(mem.weight_bytes > 0 && mem.kv_bytes == gpu.kv_page_bytes(page_size) * (n_pages + 1) &&
                mem.lora_slot_bytes > 0);
        QCOMPARE(gpu.graph_stats().workspace_grows, 0);
    }

    // Quantized checkpoints at 1 to 4 decode tokens, where the runner calls the quantized GEMV (q|k|v, gate|up
    // and down; tiny's o_proj has 192 inputs, which GPTQ's 128-groups do not divide, so it takes the dequantize
    // path): logits against the CPU runner's f32 dequantization, with a LoRA adapter on one row, graphs on.
    void quantized_decode_matches_cpu_runner_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("quant");
        QTest::addColumn<int>("batch");
        for (const char* p : {"tiny", "tiny-qwen2"})
            for (const std::string& q : model::synth_quant_names())
                for (int b : {1, 2, 3, 4})
                    QTest::newRow(qPrintable(QString("%1 %2 b%3").arg(p, q.c_str()).arg(b)))
                        << QString(p) << QString(q.c_str()) << b;
    }

    void quantized_decode_matches_cpu_runner() {
        QFETCH(QString, preset);
        QFETCH(QString, quant);
        QFETCH(int, batch);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, preset, 8, quant);
        cpu::CpuRunner cpu_runner(model_dir, 2);
        cuda::CudaRunner gpu(model_dir, 0, weight_only_fp8());
        for (ModelRunner* r : {static_cast<ModelRunner*>(&cpu_runner), static_cast<ModelRunner*>(&gpu)}) {
            r->configure_lora_slots(1, 8);
            r->load_lora_slot(1, random_lora(c, 8, 6));
        }
        const int page_size = 16, n_pages = 16;
        std::vector<int32_t> order(n_pages);
        std::iota(order.begin(), order.end(), 0);
        SequenceDriver dc(cpu_runner, n_pages, page_size, order), dg(gpu, n_pages, page_size, order);
        std::vector<SequenceDriver::Work> work;
        std::mt19937 rng(3);
        for (int i = 0; i < batch; ++i) {
            const int slot = i == batch - 1 ? 1 : 0;  // batch 1 runs the adapter alone
            const int a = dc.add_sequence(slot);
            QCOMPARE(dg.add_sequence(slot), a);
            std::vector<int32_t> toks(9);
            for (auto& t : toks) t = int32_t(rng() % uint32_t(c.vocab_size));
            work.push_back({a, toks});
        }
        std::vector<float> lc, lg;
        dc.step(work, true, lc);
        dg.step(work, true, lg);
        QVERIFY2(rel_l2(lg, lc) < 3e-2, qPrintable(QString("prefill logits rel err %1").arg(rel_l2(lg, lc))));
        int bad = 0;
        double worst = 0;
        for (int step = 0; step < 8; ++step) {
            for (std::size_t i = 0; i < work.size(); ++i) {
                auto row = lc.begin() + std::ptrdiff_t(i) * c.vocab_size;
                work[i].tokens = {int32_t(std::max_element(row, row + c.vocab_size) - row)};
            }
            dc.step(work, false, lc);
            dg.step(work, false, lg);
            const double err = rel_l2(lg, lc);
            worst = std::max(worst, err);
            QVERIFY2(err < 3e-2, qPrintable(QString("decode step %1 logits rel err %2").arg(step).arg(err)));
            const int b = argmax_disagreements_beyond_noise(lg, lc, c.vocab_size);
            if (b) qInfo("decode step %d: %d rows disagree, rel-L2 %.2e", step, b, err);
            bad += b;
        }
        qInfo("decode logits rel-L2 at most %.2e", worst);
        QCOMPARE(bad, 0);
        QCOMPARE(gpu.graph_stats().replays, 8);
    }

    // Block-scaled fp8 at widths the W8A8 route takes (the small preset; tiny's are too narrow): steps of 3+ tokens
    // round x to e4m3 per token and 128 columns. That rounding alone moves the logits a few percent, measured on the
    // CPU runner (set_fp8_activation_rounding, the same rule, against the weight-only oracle); rounding decorrelates
    // inputs that differ by bf16 noise, so the CUDA runner must stay within the bf16 bound plus 1.5 times that of the
    // CPU's W8A8 logits (a wrong scale or slice lands near 1), and with CudaRunnerOptions::fp8_w8a8 off within the bf16
    // bound of the weight-only oracle. Prefill in two chunks, decode batches of 5, 2 (the GEMV) and 3 with adapters on
    // some rows, graphs on.
    // Every fp8 layout: block-scaled from kFp8GemmMinTokens, per-channel and per-tensor (packed per channel) from
    // kFp8ChannelGemmMinTokens; the CPU rounds from the same count.
    void fp8_w8a8_matches_cpu_runner_data() {
        QTest::addColumn<QString>("quant");
        QTest::addColumn<int>("min_tokens");
        QTest::newRow("fp8") << QString("fp8") << cuda::kFp8GemmMinTokens;
        QTest::newRow("fp8-channel") << QString("fp8-channel") << cuda::kFp8ChannelGemmMinTokens;
        QTest::newRow("fp8-tensor") << QString("fp8-tensor") << cuda::kFp8ChannelGemmMinTokens;
    }

    void fp8_w8a8_matches_cpu_runner() {
        QFETCH(QString, quant);
        QFETCH(int, min_tokens);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, "small", 5, quant);
        cpu::CpuRunner cpu_wo(model_dir, 2), cpu_w8a8(model_dir, 2);
        cpu_w8a8.set_fp8_activation_rounding(min_tokens);
        cuda::CudaRunner gpu(model_dir), gpu_wo(model_dir, 0, weight_only_fp8());
        std::vector<ModelRunner*> runners{&cpu_wo, &cpu_w8a8, &gpu, &gpu_wo};
        std::vector<SequenceDriver> drivers;
        drivers.reserve(runners.size());
        for (ModelRunner* r : runners) {
            r->configure_lora_slots(2, 16);
            r->load_lora_slot(1, random_lora(c, 16, 1));
            r->load_lora_slot(2, random_lora(c, 5, 2));
            drivers.emplace_back(*r, 64, 16);
        }
        const std::vector<int> seq_slots{0, 1, 2, 0, 1};
        const std::vector<int> lens{37, 1, 19, 5, 70};
        std::mt19937 rng(9);
        std::vector<SequenceDriver::Work> work;
        for (std::size_t i = 0; i < seq_slots.size(); ++i) {
            for (auto& d : drivers) QCOMPARE(d.add_sequence(seq_slots[i]), int(i));
            std::vector<int32_t> toks(std::size_t(lens[i]));
            for (auto& t : toks) t = int32_t(rng() % uint32_t(c.vocab_size));
            work.push_back({int(i), toks});
        }
        std::vector<std::vector<float>> logits(runners.size());
        auto step = [&](const std::vector<SequenceDriver::Work>& w, bool prefill, const QString& what) {
            int tokens = 0;
            for (const auto& x : w) tokens += int(x.tokens.size());
            for (std::size_t i = 0; i < drivers.size(); ++i) drivers[i].step(w, prefill, logits[i]);
            const auto &lc = logits[0], &lw = logits[1], &lg = logits[2], &lgo = logits[3];
            const double ruler = rel_l2(lw, lc), err = rel_l2(lg, lw), err_wo = rel_l2(lgo, lc);
            const double bound = 3e-2 + 1.5 * ruler;
            qInfo(
                "%s, %d tokens: CPU W8A8 moves the logits %.2e; CUDA %.2e from it (bound %.2e), weight-only CUDA %.2e "
                "from the weight-only CPU",
                qPrintable(what), tokens, ruler, err, bound, err_wo);
            QVERIFY2(err < bound, qPrintable(QString("%1: logits rel err %2, bound %3").arg(what).arg(err).arg(bound)));
            // The bound alone would pass a runner that never took W8A8 (weight-only sits one ruler from the CPU's
            // W8A8). The first step has no KV history, so there W8A8 alone separates the two CUDA runners.
            if (what == "prefill chunk 0") {
                QVERIFY(tokens >= min_tokens);
                const double moved = rel_l2(lg, lgo);
                QVERIFY2(moved > 0.3 * ruler, qPrintable(QString("the CUDA runner did not take W8A8: it moved the "
                                                                 "logits %1 from weight-only, the CPU's rounding %2")
                                                             .arg(moved)
                                                             .arg(ruler)));
            }
            QVERIFY2(err_wo < 3e-2, qPrintable(QString("%1: weight-only logits rel err %2").arg(what).arg(err_wo)));
            QCOMPARE(argmax_disagreements_beyond_noise(lg, lw, c.vocab_size), 0);
            QCOMPARE(argmax_disagreements_beyond_noise(lgo, lc, c.vocab_size), 0);
        };
        for (int chunk = 0; chunk < 2; ++chunk) {
            std::vector<SequenceDriver::Work> part;
            for (const auto& w : work) {
                const std::size_t half = (w.tokens.size() + 1) / 2;
                std::vector<int32_t> t = chunk == 0 ? std::vector<int32_t>(w.tokens.begin(), w.tokens.begin() + half)
                                                    : std::vector<int32_t>(w.tokens.begin() + half, w.tokens.end());
                if (!t.empty()) part.push_back({w.seq, t});
            }
            step(part, true, QString("prefill chunk %1").arg(chunk));
        }
        std::vector<int32_t> next(work.size());  // the weight-only CPU's greedy tokens
        auto take_next = [&](std::size_t rows) {
            const auto first = logits[0].end() - std::ptrdiff_t(rows) * c.vocab_size;
            for (std::size_t i = 0; i < rows; ++i) {
                const auto row = first + std::ptrdiff_t(i) * c.vocab_size;
                next[i] = int32_t(std::max_element(row, row + c.vocab_size) - row);
            }
        };
        take_next(work.size());
        for (int s = 0; s < 9; ++s) {
            const int count = s < 3 ? 5 : s < 6 ? 2 : 3;  // every sequence, then 2 (the GEMV), then 3 (W8A8 again)
            std::vector<SequenceDriver::Work> w;
            for (int i = 0; i < count; ++i) w.push_back({i, {next[std::size_t(i)]}});
            step(w, false, QString("decode step %1").arg(s));
            take_next(std::size_t(count));
        }
        QVERIFY(gpu.graph_stats().replays >= 9);
    }

    // Sequences with the same prompt, prefilled one by one and decoded together, keep bit-identical logits rows
    // (the property `loradeskd bench` checks at every step): nothing in a step may depend on a row's position
    // or on which block of a split-K reduction finishes first. bf16 and every quantized path, 2 and 4 rows.
    void identical_rows_stay_identical_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("quant");
        QTest::addColumn<int>("batch");
        for (const char* q : {"", "awq", "gptq", "fp8"})
            for (int b : {2, 4})
                QTest::newRow(qPrintable(QString("%1 b%2").arg(*q ? q : "bf16").arg(b)))
                    << QString("tiny") << QString(q) << b;
        for (int b : {2, 4, 6})  // W8A8 from 3 rows: cuBLASLt's fp8 GEMM pads 6 rows to 8
            QTest::newRow(qPrintable(QString("small fp8 b%1").arg(b))) << QString("small") << QString("fp8") << b;
        // Per-channel W8A8 from 16 rows (18 padded to 20); per-tensor scales run as per-channel ones.
        for (const char* q : {"fp8-channel", "fp8-tensor"})
            for (int b : {4, 16, 18})
                QTest::newRow(qPrintable(QString("small %1 b%2").arg(q).arg(b))) << QString("small") << QString(q) << b;
    }

    void identical_rows_stay_identical() {
        QFETCH(QString, preset);
        QFETCH(QString, quant);
        QFETCH(int, batch);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, preset, 4, quant);
        cuda::CudaRunner gpu(model_dir);
        const int page_size = 16, n_pages = 8 * batch;
        std::vector<int32_t> order(static_cast<std::size_t>(n_pages));
        std::iota(order.begin(), order.end(), 0);
        SequenceDriver d(gpu, n_pages, page_size, order);
        std::vector<int32_t> prompt(40);
        std::mt19937 rng(5);
        for (auto& t : prompt) t = int32_t(rng() % uint32_t(c.vocab_size));
        std::vector<SequenceDriver::Work> work;
        std::vector<float> logits;
        for (int b = 0; b < batch; ++b) {  // one prefill step per sequence, as the bench does
            work.push_back({d.add_sequence(0), prompt});
            d.step({work.back()}, false, logits);
        }
        for (int step = 0; step < 12; ++step) {
            const int next = int(std::max_element(logits.begin(), logits.begin() + c.vocab_size) - logits.begin());
            for (auto& w : work) w.tokens = {int32_t(next)};
            d.step(work, false, logits);
            for (int b = 1; b < batch; ++b)
                for (int v = 0; v < c.vocab_size; ++v)
                    if (logits[std::size_t(b) * c.vocab_size + v] != logits[std::size_t(v)])
                        QFAIL(qPrintable(QString("decode step %1: row %2 differs from row 0 at logit %3 (%4 vs %5)")
                                             .arg(step)
                                             .arg(b)
                                             .arg(v)
                                             .arg(logits[std::size_t(b) * c.vocab_size + v])
                                             .arg(logits[std::size_t(v)])));
        }
    }

    // forward_sampled (the engine loop's path): the device argmax of every row equals the host argmax of the
    // same step's forward() logits, and the flagged rows come back packed and equal, on the eager prefill and
    // on a decode step replayed from a graph.
    void forward_sampled_matches_forward() {
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth_tiny(model_dir, 5);
        cuda::CudaRunner full(model_dir), sampled(model_dir);
        SequenceDriver df(full, 64, 16), ds(sampled, 64, 16);
        std::mt19937 rng(9);
        std::vector<SequenceDriver::Work> w;
        for (int i = 0; i < 11; ++i) {
            QCOMPARE(df.add_sequence(0), ds.add_sequence(0));
            std::vector<int32_t> toks(1 + rng() % 30);
            for (auto& t : toks) t = int32_t(rng() % uint32_t(c.vocab_size));
            w.push_back({i, toks});
        }
        for (int step = 0; step < 2; ++step) {
            std::vector<float> logits, rows;
            std::vector<int32_t> argmax;
            std::vector<uint8_t> want(w.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = (i % 3 == 1) || i == want.size() - 1;
            df.step(w, false, logits);
            // Every third row is grammar-masked (a random ~1/8 of the vocabulary, token 1 always allowed); the
            // rest take the plain argmax, as the engine loop mixes them.
            const int words = (c.vocab_size + 31) / 32;
            std::vector<int32_t> which(w.size(), -1);
            std::vector<uint32_t> masks;
            for (std::size_t i = 0; i < w.size(); i += 3) {
                which[i] = int32_t(masks.size() / std::size_t(words));
                for (int k = 0; k < words; ++k) masks.push_back(uint32_t(rng()) & uint32_t(rng()) & uint32_t(rng()));
                masks[std::size_t(which[i]) * std::size_t(words)] |= 2u;
            }
            sampled.forward_sampled(ds.build(w, false), want, argmax, rows, runtime::RowMasks{masks, which, words, {}});
            QCOMPARE(argmax.size(), w.size());
            std::size_t packed = 0;
            for (std::size_t i = 0; i < w.size(); ++i) {
                auto row = logits.begin() + std::ptrdiff_t(i) * c.vocab_size;
                if (which[i] < 0) {
                    QCOMPARE(argmax[i], int32_t(std::max_element(row, row + c.vocab_size) - row));
                } else {
                    const uint32_t* m = masks.data() + std::size_t(which[i]) * std::size_t(words);
                    int best = -1;
                    for (int t = 0; t < c.vocab_size; ++t)
                        if ((m[t / 32] >> (t % 32) & 1u) && (best < 0 || row[t] > row[best])) best = t;
                    QCOMPARE(argmax[i], best);
                }
                if (!want[i]) continue;
                std::vector<float> a(row, row + c.vocab_size),
                    b(rows.begin() + std::ptrdiff_t(packed * c.vocab_size),
                      rows.begin() + std::ptrdiff_t((packed + 1) * c.vocab_size));
                QVERIFY(rel_l2(a, b) < 1e-6);
                ++packed;
            }
            QCOMPARE(rows.size(), packed * std::size_t(c.vocab_size));
            for (std::size_t i = 0; i < w.size(); ++i) w[i].tokens = {argmax[i]};  // then one decode step
        }
        QVERIFY(sampled.graph_stats().replays >= 1);
    }

    void rejects_bad_lora() {
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth_tiny(model_dir);
        cuda::CudaRunner gpu(model_dir);
        gpu.configure_lora_slots(2, 8);
        auto throws = [&](int slot, const LoraWeights& w) {
            try {
                gpu.load_lora_slot(slot, w);
            } catch (const std::runtime_error&) {
                return true;
            }
            return false;
        };
        QVERIFY(throws(1, random_lora(c, 9, 1)));  // rank over the slot size
        QVERIFY(throws(3, random_lora(c, 4, 1)));  // no such slot
        LoraWeights wrong = random_lora(c, 4, 1);
        wrong.layers.pop_back();
        QVERIFY(throws(1, wrong));
        QVERIFY(!throws(2, random_lora(c, 8, 1)));
    }
};

QTEST_GUILESS_MAIN(TstCudaRunner)
#include "tst_cuda_runner.moc"
