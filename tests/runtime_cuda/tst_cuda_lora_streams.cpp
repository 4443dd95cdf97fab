// The CUDA runner's LoRA work beside the base projections: the side stream's shrink (and expand) against a serial
// runner, bit for bit, bf16 and quantized; the pending delta of the quantized 1-2 token route; adapters prepared
// on another thread and the per-slot waits for their uploads. Label cuda: needs a GPU.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <thread>
#include <tuple>

#include "cuda_runner_checks.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::runtime;
using namespace loradesk::runtime::testing;

namespace {

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

class TstCudaLoraStreams : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        if (!cuda::cuda_device_available()) QFAIL("no CUDA device: run this test on the GPU machine");
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
};

QTEST_GUILESS_MAIN(TstCudaLoraStreams)
#include "tst_cuda_lora_streams.moc"
