// Whole-model correctness of the CUDA runner against the CPU reference runner on synthesized checkpoints of
// all four architectures (Qwen3 q/k norm, Qwen2 qkv bias, Llama 3 rope scaling, Mistral): logits of a mixed
// prefill (prompts over cached pages, three LoRA slots of odd ranks and base rows in one batch), then
// greedy decode steps fed the CPU's tokens (decode replays CUDA graphs, or runs eagerly, per data row).
// Also decode graphs vs eager steps across bucket boundaries, base-only and LoRA batches, and slot reloads
// between replays; and a step's logits bit-identical whatever the runner ran before (graphs captured with
// other data, stale metadata). Label cuda: needs a GPU.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>

#include "core/dtype.h"
#include "model/synth_model.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/cuda/quant_route.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::runtime;

namespace {

// rank 0 leaves a module unadapted; others get random A, B so that the delta is visible but not dominant.
LoraWeights random_lora(const model::ModelConfig& c, int rank, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::normal_distribution<float> dist(0.0f, 1.0f);
    LoraWeights w;
    w.layers.resize(std::size_t(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
        for (int m = 0; m < kNumLoraModules; ++m) {
            if ((l + m + int(seed)) % 4 == 0) continue;  // some modules stay unadapted
            int in = m == 3 ? c.q_dim() : m == 6 ? c.intermediate_size : c.hidden_size;
            int out = m == 0               ? c.q_dim()
                      : (m == 1 || m == 2) ? c.kv_dim()
                      : m >= 4 && m <= 5   ? c.intermediate_size
                                           : c.hidden_size;
            auto& mw = w.layers[std::size_t(l)][std::size_t(m)];
            mw.rank = rank;
            mw.scale = 2.0f / float(rank);
            mw.a.resize(std::size_t(rank) * in);
            mw.b.resize(std::size_t(out) * rank);
            for (auto& v : mw.a) v = bf16_to_f32(f32_to_bf16(dist(rng) / std::sqrt(float(in))));
            for (auto& v : mw.b) v = bf16_to_f32(f32_to_bf16(dist(rng) * 0.5f));
        }
    return w;
}

// A synthesized Qwen3-shaped "tiny" checkpoint in `dir` (a fixed seed per test, so failures reproduce).
// A synthetic checkpoint of `preset` in dir, quantized as `quant` ("" = bf16).
model::ModelConfig synth(const std::string& dir, const QString& preset, uint64_t seed, const QString& quant = {}) {
    model::SynthOptions so;
    so.preset = preset.toStdString(), so.out_dir = dir, so.seed = seed, so.quant = quant.toStdString();
    return model::synth_model(so);
}

model::ModelConfig synth_tiny(const std::string& dir, uint64_t seed = model::SynthOptions{}.seed) {
    return synth(dir, "tiny", seed);
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num += double(a[i] - b[i]) * (a[i] - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

// Rows where the CPU's best token leads clearly must have the same argmax on the GPU.
int argmax_disagreements(const std::vector<float>& gpu, const std::vector<float>& cpu, int vocab) {
    int bad = 0;
    for (std::size_t r = 0; r < cpu.size() / vocab; ++r) {
        auto row = cpu.begin() + r * vocab;
        std::vector<float> sorted(row, row + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        int c = int(std::max_element(row, row + vocab) - row);
        int g =
            int(std::max_element(gpu.begin() + r * vocab, gpu.begin() + (r + 1) * vocab) - (gpu.begin() + r * vocab));
        if (c != g && sorted[0] - sorted[1] > 0.02f * std::max(1.0f, std::fabs(sorted[0]))) ++bad;
    }
    return bad;
}

// Like argmax_disagreements, but a lead counts as clear only when it also exceeds 6 times the row's own
// rms logit error: quantized rows carry an fp8/int4 weight rounded once more to bf16 on either side of the
// comparison, and a flip inside that measured noise is numerics, not a wrong kernel.
// The weight-only kernels for fp8 at every token count: the tests against the weight-only CPU oracle use it, and
// fp8_w8a8_matches_cpu_runner covers the W8A8 route (on per-channel fp8 it takes even tiny's widths).
cuda::CudaRunnerOptions weight_only_fp8() {
    cuda::CudaRunnerOptions o;
    o.fp8_w8a8 = false;
    return o;
}

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

// One driver per runner, each runner holding the same random adapters of rank 4, 8 and 12 in slots 1-3.
std::vector<SequenceDriver> three_adapter_drivers(const model::ModelConfig& c,
                                                  std::initializer_list<cuda::CudaRunner*> runners) {
    std::vector<SequenceDriver> drivers;
    drivers.reserve(runners.size());
    for (cuda::CudaRunner* r : runners) {
        r->configure_lora_slots(3, 16);
        for (int slot = 1; slot <= 3; ++slot) r->load_lora_slot(slot, random_lora(c, 4 * slot, uint64_t(slot)));
        drivers.emplace_back(*r, 256, 16);
    }
    return drivers;
}

// The same n_seqs sequences on every driver, per_slot of them on each of slots 0 (base) to 3 in turn, and their
// prefill: random prompts of 1 to 12 tokens. Sequence ids are 0 .. n_seqs - 1 on every driver.
std::vector<SequenceDriver::Work> add_random_sequences(std::vector<SequenceDriver>& drivers, int n_seqs, int per_slot,
                                                       std::mt19937& rng, int vocab) {
    std::vector<SequenceDriver::Work> prefill;
    for (int i = 0; i < n_seqs; ++i) {
        for (auto& d : drivers)
            if (d.add_sequence(i / per_slot) != i) return {};
        std::vector<int32_t> toks(1 + rng() % 12);
        for (auto& t : toks) t = int32_t(rng() % uint32_t(vocab));
        prefill.push_back({i, toks});
    }
    return prefill;
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

    // The shrink of an unfused LoRA site runs on a second stream beside the base projection (CudaRunnerOptions::
    // lora_beside_base); it changes the order of work, never its arithmetic: the logits equal those of a runner
    // that runs shrink, base and expand one after another, bit for bit, for prefills (cuBLAS, quant_mma passes,
    // fp8's dequantize path past 32 tokens) and decode steps (graphs from 3 tokens up, eager), bf16 and quantized.
    void lora_beside_base_matches_serial_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("quant");
        for (const char* q : {"", "awq", "gptq", "gptq-actorder", "fp8"})
            QTest::newRow(*q ? q : "bf16") << QString("tiny") << QString(q);
        QTest::newRow("small fp8 (W8A8)") << QString("small") << QString("fp8");
    }
    void lora_beside_base_matches_serial() {
        QFETCH(QString, preset);
        QFETCH(QString, quant);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, preset, 17, quant);
        cuda::CudaRunnerOptions serial_options;
        serial_options.lora_beside_base = false;
        cuda::CudaRunner beside(model_dir), serial(model_dir, 0, serial_options);
        std::vector<SequenceDriver> drivers = three_adapter_drivers(c, {&beside, &serial});
        std::mt19937 rng(31);
        const int n_seqs = 40;  // 10 base sequences, then 10 per slot
        const std::vector<SequenceDriver::Work> prefill = add_random_sequences(drivers, n_seqs, 10, rng, c.vocab_size);
        QCOMPARE(int(prefill.size()), n_seqs);
        std::vector<int32_t> next(n_seqs);
        std::vector<float> la, lb;
        auto compare = [&](const char* what, std::size_t rows) {
            QCOMPARE(la.size(), lb.size());
            int differ = 0;
            for (std::size_t r = 0; r < rows; ++r)
                differ += std::memcmp(la.data() + r * std::size_t(c.vocab_size),
                                      lb.data() + r * std::size_t(c.vocab_size), std::size_t(c.vocab_size) * 4) != 0;
            QVERIFY2(differ == 0, qPrintable(QString("%1: %2 of %3 rows differ").arg(what).arg(differ).arg(rows)));
        };
        drivers[0].step(prefill, false, la);
        drivers[1].step(prefill, false, lb);
        compare("prefill", prefill.size());
        auto take_next = [&](const std::vector<SequenceDriver::Work>& w) {
            for (std::size_t i = 0; i < w.size(); ++i) {
                auto row = la.begin() + std::ptrdiff_t(i) * c.vocab_size;
                next[std::size_t(w[i].seq)] = int32_t(std::max_element(row, row + c.vocab_size) - row);
            }
        };
        take_next(prefill);
        // (first sequence, count, graphs): adapter-only and mixed decode batches of 3 to 40 tokens.
        const std::vector<std::tuple<int, int, bool>> steps{{10, 3, true},  {8, 6, true},   {5, 20, true},
                                                            {0, 40, true},  {12, 9, false}, {0, 33, false},
                                                            {10, 30, true}, {0, 40, true}};
        for (const auto& [first, count, graphs] : steps) {
            beside.set_cuda_graphs(graphs);
            serial.set_cuda_graphs(graphs);
            std::vector<SequenceDriver::Work> w;
            for (int i = first; i < first + count; ++i) w.push_back({i, {next[std::size_t(i)]}});
            drivers[0].step(w, false, la);
            drivers[1].step(w, false, lb);
            compare(qPrintable(QString("decode %1 from %2%3").arg(count).arg(first).arg(graphs ? "" : " eager")),
                    w.size());
            take_next(w);
        }
        QVERIFY(beside.graph_stats().replays >= 6);
    }

    // CudaRunnerOptions::quant_lora_delta: on a quantized base, steps below 16 tokens run each site's shrink and expand
    // beside the base kernel, into a delta that the site's reader adds (the RoPE-fused decode attention, the residual
    // norms, silu_mul), and 1-2 tokens leave the fused quant_mma / fp8 GEMV route for the base one. The logits equal,
    // bit for bit, those of the same route run serially on one stream (shrink, base kernel, expand into the output),
    // for decode steps of 1 to 12 tokens, graphs and eager, adapter-only and mixed with base rows; and they stay within
    // bf16 noise of the fused route (quant_lora_delta off: the LoRA inside quant_mma / the fp8 GEMV at 1-2 tokens), so
    // that a delta dropped on both would show.
    void quant_lora_delta_matches_serial_data() {
        QTest::addColumn<QString>("quant");
        for (const char* q : {"awq", "gptq", "gptq-actorder", "fp8"}) QTest::newRow(q) << QString(q);
    }
    void quant_lora_delta_matches_serial() {
        QFETCH(QString, quant);
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth(model_dir, "tiny", 23, quant);
        cuda::CudaRunnerOptions beside_options, serial_options, fused_options;
        beside_options.quant_lora_delta = serial_options.quant_lora_delta = true;
        serial_options.lora_beside_base = false;
        fused_options.quant_lora_delta = false;
        cuda::CudaRunner beside(model_dir, 0, beside_options), serial(model_dir, 0, serial_options),
            fused(model_dir, 0, fused_options);
        std::vector<SequenceDriver> drivers = three_adapter_drivers(c, {&beside, &serial, &fused});
        std::mt19937 rng(37);
        const int n_seqs = 16;  // 4 base sequences, then 4 per slot
        const std::vector<SequenceDriver::Work> prefill = add_random_sequences(drivers, n_seqs, 4, rng, c.vocab_size);
        QCOMPARE(int(prefill.size()), n_seqs);
        std::vector<int32_t> next(n_seqs);
        std::vector<float> l[3];
        auto run = [&](const std::vector<SequenceDriver::Work>& w) {
            for (int r = 0; r < 3; ++r) drivers[std::size_t(r)].step(w, false, l[r]);
            for (std::size_t i = 0; i < w.size(); ++i) {
                auto row = l[0].begin() + std::ptrdiff_t(i) * c.vocab_size;
                next[std::size_t(w[i].seq)] = int32_t(std::max_element(row, row + c.vocab_size) - row);
            }
        };
        run(prefill);
        // (first sequence, count, graphs): one adapter, two adapters, a base row beside adapter rows, 3-12 tokens.
        const std::vector<std::tuple<int, int, bool>> steps{{4, 1, true},  {5, 1, false}, {7, 2, true}, {3, 2, false},
                                                            {8, 1, true},  {2, 3, true},  {4, 5, true}, {0, 12, true},
                                                            {10, 2, true}, {4, 12, false}};
        for (const auto& [first, count, graphs] : steps) {
            for (cuda::CudaRunner* r : {&beside, &serial, &fused}) r->set_cuda_graphs(graphs);
            std::vector<SequenceDriver::Work> w;
            for (int i = first; i < first + count; ++i) w.push_back({i, {next[std::size_t(i)]}});
            run(w);
            const QString what = QString("decode %1 from %2%3").arg(count).arg(first).arg(graphs ? "" : " eager");
            QCOMPARE(l[0].size(), l[1].size());
            QVERIFY2(std::memcmp(l[0].data(), l[1].data(), l[0].size() * 4) == 0,
                     qPrintable(what + ": the delta route differs from the serial one"));
            const double err = rel_l2(l[0], l[2]);
            QVERIFY2(err < 2e-2, qPrintable(what + QString(": rel err %1 against the fused route").arg(err)));
        }
        QVERIFY(beside.graph_stats().replays >= 4);
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

    // A slot loaded from prepare_lora's form (made on another thread, as the tier store's loader does) gives
    // the same logits as one loaded from the f32 weights; and a step waits only for uploads of the slots its
    // batch uses, once per upload (lora_upload_waits counts the waits issued).
    void prepared_slots_and_per_slot_waits() {
        QTemporaryDir dir;
        const std::string model_dir = dir.path().toStdString();
        const model::ModelConfig c = synth_tiny(model_dir, 5);
        cuda::CudaRunner gpu(model_dir);
        gpu.set_cuda_graphs(false);
        gpu.configure_lora_slots(3, 16);
        const LoraWeights w = random_lora(c, 12, 5);
        std::shared_ptr<const PreparedLora> prepared;
        std::thread([&] { prepared = gpu.prepare_lora(w); }).join();
        QVERIFY(prepared && prepared->bytes() > 0);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(0));
        gpu.load_lora_slot(1, w);
        gpu.load_prepared_lora_slot(2, prepared);
        SequenceDriver d(gpu, 64, 16);
        const int on1 = d.add_sequence(1), on2 = d.add_sequence(2), base = d.add_sequence(0);
        std::vector<int32_t> prompt(23);
        std::mt19937 rng(8);
        for (auto& t : prompt) t = int32_t(rng() % uint32_t(c.vocab_size));
        std::vector<float> l1, l2, l0;
        d.step({{on1, prompt}}, false, l1);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(1));  // slot 1 only, though slot 2's upload was issued too
        d.step({{base, prompt}}, false, l0);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(1));  // base rows wait for no upload
        d.step({{on2, prompt}}, false, l2);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(2));
        float max_diff = 0;
        for (std::size_t i = 0; i < l1.size(); ++i) max_diff = std::max(max_diff, std::fabs(l1[i] - l2[i]));
        QVERIFY2(l1.size() == l2.size() && rel_l2(l2, l1) < 1e-6,
                 qPrintable(QString("prepared slot 2 vs f32 slot 1: rel-L2 %1, max |diff| %2 over %3 logits")
                                .arg(rel_l2(l2, l1))
                                .arg(max_diff)
                                .arg(l1.size())));
        QVERIFY2(rel_l2(l0, l1) > 1e-3, "the adapter did not change the logits (the test would prove nothing)");

        // A new upload into slot 3 does not hold back steps on slots 1 and 2; the first step on slot 3 waits.
        std::shared_ptr<const PreparedLora> other;
        std::thread([&] { other = gpu.prepare_lora(random_lora(c, 16, 9)); }).join();
        gpu.load_prepared_lora_slot(3, other);
        auto next = [&](const std::vector<float>& logits) {
            return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        };
        std::vector<float> l;
        d.step({{on1, {next(l1)}}, {on2, {next(l2)}}}, false, l);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(2));
        QVERIFY(rel_l2(std::vector<float>(l.begin(), l.begin() + c.vocab_size),
                       std::vector<float>(l.begin() + c.vocab_size, l.end())) < 1e-4);  // one batch, two segments
        const int on3 = d.add_sequence(3);
        d.step({{on3, prompt}}, false, l);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(3));
        d.step({{on3, {next(l)}}}, false, l);
        QCOMPARE(gpu.lora_upload_waits(), int64_t(3));  // once per upload
        QTRY_VERIFY(gpu.lora_uploads_done() && !gpu.lora_slot_uploading(3));

        // Slot 2 reloaded the f32 way with the same weights after the prepared form was let go (its pinned
        // buffer goes back to the pool): same logits as before.
        prepared.reset();
        gpu.clear_lora_slot(2);
        gpu.load_lora_slot(2, w);
        const int again = d.add_sequence(2);
        std::vector<float> l2b;
        d.step({{again, prompt}}, false, l2b);
        QVERIFY(rel_l2(l2b, l1) < 1e-6);

        // Forms of another runner or of another slot configuration are refused; bad weights fail to prepare.
        cuda::CudaRunner second(model_dir);
        second.configure_lora_slots(3, 16);
        QVERIFY_THROWS_EXCEPTION(Error, second.load_prepared_lora_slot(1, other));
        QVERIFY_THROWS_EXCEPTION(Error, gpu.prepare_lora(random_lora(c, 17, 1)));  // rank over the slot size
        gpu.configure_lora_slots(2, 32);
        QVERIFY_THROWS_EXCEPTION(Error, gpu.load_prepared_lora_slot(1, other));
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
