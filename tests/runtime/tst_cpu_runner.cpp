// engine/runtime/cpu: forward invariants of the reference runner on the tiny preset of every family
// (incremental == prefill, batched == alone, scattered pages == contiguous, chunked == one-shot) and
// LoRA semantics (zero B == base, W + s*B*A merged == adapter, mixed slots == each alone).
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "model/safetensors.h"
#include "model/synth_model.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::runtime;
using loradesk::runtime::cpu::CpuRunner;

namespace {

constexpr int kPage = 4;

std::vector<int32_t> prompt(int len, int salt, int vocab) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(int32_t((i * 37 + salt * 101 + 11) % vocab));
    return p;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    float d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// All-position logits of one prompt run in one step.
std::vector<float> prefill_all(CpuRunner& r, const std::vector<int32_t>& p, int slot = 0) {
    SequenceDriver d(r, 64, kPage);
    std::vector<float> out;
    d.step({{d.add_sequence(slot), p}}, true, out);
    return out;
}

LoraWeights random_lora(const model::ModelConfig& c, int rank, float scale, uint32_t seed, bool zero_b) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    LoraWeights w;
    w.layers.resize(std::size_t(c.n_layers));
    auto dims = [&](int m) -> std::pair<int, int> {
        switch (LoraModule(m)) {
            case LoraModule::q:
                return {c.hidden_size, c.q_dim()};
            case LoraModule::k:
            case LoraModule::v:
                return {c.hidden_size, c.kv_dim()};
            case LoraModule::o:
                return {c.q_dim(), c.hidden_size};
            case LoraModule::down:
                return {c.intermediate_size, c.hidden_size};
            default:
                return {c.hidden_size, c.intermediate_size};
        }
    };
    for (auto& layer : w.layers)
        for (int m = 0; m < kNumLoraModules; ++m) {
            auto [in, out] = dims(m);
            LoraModuleWeights& mw = layer[std::size_t(m)];
            mw.rank = rank - (m % 2);  // modules get their own ranks
            mw.scale = scale * float(1 + m % 3);
            for (int i = 0; i < mw.rank * in; ++i) mw.a.push_back(u(rng));
            for (int i = 0; i < out * mw.rank; ++i) mw.b.push_back(zero_b ? 0.0f : u(rng));
        }
    return w;
}

}  // namespace

class TstCpuRunner : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string dir(const QString& preset) const { return (m_tmp.path() + "/" + preset).toStdString(); }

  private slots:
    void initTestCase() {
        for (const char* p : {"tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"}) {
            model::SynthOptions o;
            o.preset = p;
            o.out_dir = dir(p);
            o.seed = 3;
            o.dtype = std::string(p) == "tiny" ? DType::f32 : DType::bf16;
            model::synth_model(o);
        }
    }
    void invariants_data() {
        QTest::addColumn<QString>("preset");
        for (const char* p : {"tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"}) QTest::newRow(p) << p;
    }
    void invariants() {
        QFETCH(QString, preset);
        CpuRunner r(dir(preset), 2);
        const int V = r.config().vocab_size;
        const std::vector<int32_t> a = prompt(13, 1, V), b = prompt(7, 2, V), c = prompt(19, 3, V);
        const std::vector<float> full_a = prefill_all(r, a), full_b = prefill_all(r, b), full_c = prefill_all(r, c);
        float scale = 0;
        for (float v : full_a) scale = std::max(scale, std::fabs(v));
        QVERIFY(scale > 0.5f && std::isfinite(scale));
        const float tol = 1e-5f * scale;

        {  // incremental decode == full prefill at every position
            SequenceDriver d(r, 64, kPage);
            int s = d.add_sequence();
            std::vector<float> row, inc;
            for (int32_t t : a) {
                d.step({{s, {t}}}, false, row);
                inc.insert(inc.end(), row.begin(), row.end());
            }
            QVERIFY2(max_abs_diff(inc, full_a) <= tol, "incremental decode differs from prefill");
        }
        {  // chunked prefill (5 + 1 + 7 tokens) == one-shot
            SequenceDriver d(r, 64, kPage);
            int s = d.add_sequence();
            std::vector<float> part, chunked;
            for (auto [from, to] : {std::pair{0, 5}, std::pair{5, 6}, std::pair{6, 13}}) {
                d.step({{s, std::vector<int32_t>(a.begin() + from, a.begin() + to)}}, true, part);
                chunked.insert(chunked.end(), part.begin(), part.end());
            }
            QVERIFY2(max_abs_diff(chunked, full_a) <= tol, "chunked prefill differs");
        }
        {  // a batch of different-length sequences, on scattered shuffled pages == each alone
            std::vector<int32_t> order(64);
            for (int i = 0; i < 64; ++i) order[std::size_t(i)] = int32_t(i);
            std::shuffle(order.begin(), order.end(), std::mt19937(5));
            SequenceDriver d(r, 64, kPage, order);
            int sa = d.add_sequence(), sb = d.add_sequence(), sc = d.add_sequence();
            // Interleave allocation so that the sequences' pages are not contiguous either.
            std::vector<float> out;
            d.step({{sa, {a[0]}}, {sb, {b[0]}}, {sc, {c[0]}}}, true, out);
            std::vector<float> batched;
            d.step({{sa, std::vector<int32_t>(a.begin() + 1, a.end())},
                    {sb, std::vector<int32_t>(b.begin() + 1, b.end())},
                    {sc, std::vector<int32_t>(c.begin() + 1, c.end())}},
                   true, batched);
            auto rows = [&](const std::vector<float>& full, int from, int to) {
                return std::vector<float>(full.begin() + std::ptrdiff_t(from) * V,
                                          full.begin() + std::ptrdiff_t(to) * V);
            };
            const int na = 12, nb = 6, nc = 18;
            QVERIFY(max_abs_diff(rows(batched, 0, na), rows(full_a, 1, 13)) <= tol);
            QVERIFY(max_abs_diff(rows(batched, na, na + nb), rows(full_b, 1, 7)) <= tol);
            QVERIFY(max_abs_diff(rows(batched, na + nb, na + nb + nc), rows(full_c, 1, 19)) <= tol);
            QVERIFY(max_abs_diff(rows(out, 0, 1), rows(full_a, 0, 1)) <= tol);
        }
    }
    // The default forward_sampled: argmax of every row (first maximum) and the flagged rows packed in order,
    // equal to forward()'s rows of the same step.
    void forward_sampled_default() {
        CpuRunner a(dir("tiny"), 1), b(dir("tiny"), 1);
        SequenceDriver da(a, 32, 16), db(b, 32, 16);
        std::vector<SequenceDriver::Work> w;
        for (int i = 0; i < 5; ++i) {
            QCOMPARE(da.add_sequence(0), db.add_sequence(0));
            w.push_back({i, prompt(3 + i, i, a.config().vocab_size)});
        }
        const std::size_t v = std::size_t(a.config().vocab_size);
        std::vector<float> all, rows;
        std::vector<int32_t> argmax;
        const std::vector<uint8_t> want{0, 1, 1, 0, 1};
        da.step(w, false, all);
        b.forward_sampled(db.build(w, false), want, argmax, rows);
        QCOMPARE(rows.size(), 3 * v);
        std::size_t packed = 0;
        for (std::size_t i = 0; i < w.size(); ++i) {
            auto row = all.begin() + std::ptrdiff_t(i * v);
            QCOMPARE(argmax[i], int32_t(std::max_element(row, row + std::ptrdiff_t(v)) - row));
            if (want[i]) QVERIFY(std::equal(row, row + std::ptrdiff_t(v), rows.begin() + std::ptrdiff_t(packed++ * v)));
        }
    }
    // Grammar masks on the default forward_sampled: a masked row's argmax is the best allowed token, an unmasked
    // row in the same step keeps the plain argmax, and `ready` runs before the masks are read.
    void forward_sampled_masked_rows() {
        CpuRunner a(dir("tiny"), 1), b(dir("tiny"), 1);
        SequenceDriver da(a, 32, 16), db(b, 32, 16);
        std::vector<SequenceDriver::Work> w;
        for (int i = 0; i < 4; ++i) {
            QCOMPARE(da.add_sequence(0), db.add_sequence(0));
            w.push_back({i, prompt(4 + i, i, a.config().vocab_size)});
        }
        const int v = a.config().vocab_size, words = (v + 31) / 32;
        std::vector<uint32_t> masks(std::size_t(2 * words), 0u);
        for (int t = 5; t < v; t += 7) masks[std::size_t(t / 32)] |= 1u << (t % 32);  // mask 0
        masks[std::size_t(words + 3 / 32)] |= 1u << 3;                                // mask 1: token 3
        const std::vector<int32_t> which{0, -1, 1, 0};
        bool ready = false;
        runtime::RowMasks rm{masks, which, words, [&] { ready = true; }};
        std::vector<float> all, rows;
        std::vector<int32_t> argmax;
        da.step(w, false, all);
        b.forward_sampled(db.build(w, false), {}, argmax, rows, rm);
        QVERIFY(ready);
        for (std::size_t i = 0; i < w.size(); ++i) {
            const float* row = all.data() + i * std::size_t(v);
            int best = -1;
            for (int t = 0; t < v; ++t) {
                const bool allowed = which[i] < 0 || (masks[std::size_t(which[i] * words + t / 32)] >> (t % 32) & 1u);
                if (allowed && (best < 0 || row[t] > row[best])) best = t;
            }
            QCOMPARE(argmax[i], best);
        }
        QCOMPARE(argmax[2], 3);
    }
    void lora_zero_b_is_base() {
        CpuRunner r(dir("tiny-qwen2"), 2);
        r.configure_lora_slots(2, 8);
        r.load_lora_slot(1, random_lora(r.config(), 8, 0.5f, 1, true));
        const std::vector<int32_t> p = prompt(9, 4, r.config().vocab_size);
        QCOMPARE(max_abs_diff(prefill_all(r, p, 1), prefill_all(r, p, 0)), 0.0f);
    }
    void lora_equals_merged_weights() {
        // Adapter on layer 1 q_proj and down_proj only, against a checkpoint with W + s*B*A merged in.
        const std::string base = dir("tiny");
        const std::string merged = (m_tmp.path() + "/tiny-merged").toStdString();
        std::filesystem::copy(base, merged, std::filesystem::copy_options::recursive);
        CpuRunner r(base, 2);
        const auto& c = r.config();
        LoraWeights full = random_lora(c, 4, 0.75f, 9, false);
        LoraWeights lora;
        lora.layers.resize(std::size_t(c.n_layers));
        for (LoraModule m : {LoraModule::q, LoraModule::down})
            lora.layers[1][std::size_t(m)] = full.layers[1][std::size_t(m)];
        model::SafetensorsWriter w;
        {
            model::SafetensorsFile f(base + "/model.safetensors");
            for (const model::TensorView& t : f.tensors()) {
                std::vector<float> v = t.to_f32();
                LoraModule m = LoraModule::q;
                bool hit = false;
                if (t.name == "model.layers.1.self_attn.q_proj.weight") hit = true;
                if (t.name == "model.layers.1.mlp.down_proj.weight") hit = true, m = LoraModule::down;
                if (hit) {
                    const LoraModuleWeights& lw = lora.layers[1][std::size_t(m)];
                    const int out = int(t.shape[0]), in = int(t.shape[1]);
                    for (int o = 0; o < out; ++o)
                        for (int i = 0; i < in; ++i) {
                            double s = 0;
                            for (int k = 0; k < lw.rank; ++k)
                                s += double(lw.b[std::size_t(o * lw.rank + k)]) * lw.a[std::size_t(k * in + i)];
                            v[std::size_t(o * in + i)] += float(lw.scale * s);
                        }
                }
                w.add_f32_as(t.name, DType::f32, t.shape, v);
            }
        }
        w.write(merged + "/model.safetensors");
        r.configure_lora_slots(1, 4);
        r.load_lora_slot(1, lora);
        CpuRunner m(merged, 2);
        const std::vector<int32_t> p = prompt(11, 6, c.vocab_size);
        const std::vector<float> with_lora = prefill_all(r, p, 1), with_merged = prefill_all(m, p),
                                 base_logits = prefill_all(r, p, 0);
        float scale = 0;
        for (float v : with_merged) scale = std::max(scale, std::fabs(v));
        QVERIFY2(max_abs_diff(with_lora, with_merged) <= 1e-4f * scale, "LoRA differs from merged weights");
        QVERIFY2(max_abs_diff(with_lora, base_logits) > 1e-2f * scale, "the adapter had no visible effect");
    }
    void mixed_slots_batch() {
        CpuRunner r(dir("tiny-llama"), 2);
        const auto& c = r.config();
        r.configure_lora_slots(3, 8);
        r.load_lora_slot(1, random_lora(c, 8, 0.5f, 21, false));
        r.load_lora_slot(2, random_lora(c, 3, 2.0f, 22, false));
        const int V = c.vocab_size;
        const std::vector<int32_t> p0 = prompt(6, 7, V), p1 = prompt(9, 8, V), p2 = prompt(5, 9, V),
                                   p3 = prompt(8, 10, V);
        std::vector<std::vector<float>> alone = {prefill_all(r, p0, 0), prefill_all(r, p1, 1), prefill_all(r, p2, 1),
                                                 prefill_all(r, p3, 2)};
        QVERIFY(max_abs_diff(alone[0], prefill_all(r, p0, 2)) > 1e-3f);
        SequenceDriver d(r, 64, kPage);
        int s0 = d.add_sequence(0), s1 = d.add_sequence(1), s2 = d.add_sequence(1), s3 = d.add_sequence(2);
        std::vector<float> out;
        d.step({{s0, p0}, {s1, p1}, {s2, p2}, {s3, p3}}, true, out);
        std::vector<float> expected;
        for (auto& a : alone) expected.insert(expected.end(), a.begin(), a.end());
        QVERIFY(max_abs_diff(out, expected) <= 1e-5f * 20);
    }
    // W8A8 emulation (set_fp8_activation_rounding): each block of 128 inputs is rounded to e4m3 under its own
    // amax / 448 scale; a step changes only when it has the tokens and the model is block-fp8.
    void fp8_round_rows_per_block() {
        std::vector<float> x(2 * 130, 0.0f), out(x.size(), -1.0f);
        x[0] = 2.0f, x[1] = -1.0f, x[2] = 0.1f, x[128] = 3.0f, x[129] = 1.0f;  // row 0: block 0, block 1 (2 wide)
        x[130 + 7] = -448e-6f;                                                 // row 1: its block's amax
        cpu::fp8_round_rows(x.data(), 2, 130, 128, out.data());
        std::vector<float> per_row(x.size());
        cpu::fp8_round_rows(x.data(), 2, 130, 130, per_row.data());  // one scale per row: row 0's is 3 / 448
        QCOMPARE(per_row[128], 3.0f);
        QVERIFY(std::fabs(per_row[0] - 2.0f) < 2.0f / 16);
        QCOMPARE(out[0], 2.0f);  // the amax maps to 448 and back
        QVERIFY(std::fabs(out[1] + 1.0f) < 1e-6f);
        QVERIFY(std::fabs(out[2] - 0.1f) < 0.1f / 16 && out[2] != 0.1f);  // e4m3: 3 mantissa bits
        QCOMPARE(out[128], 3.0f);
        QVERIFY(std::fabs(out[129] - 1.0f) < 1.0f / 16);
        QCOMPARE(out[3], 0.0f);
        QVERIFY(std::fabs(out[130 + 7] + 448e-6f) < 1e-9f);
        QCOMPARE(out[130 + 128], 0.0f);  // an all-zero block stays zero
    }
    void fp8_activation_rounding_gates() {
        for (const char* quant : {"fp8", "fp8-channel", "fp8-tensor", "awq", ""}) {
            model::SynthOptions o;
            o.preset = "small", o.out_dir = dir(QString("small-") + quant), o.seed = 3, o.quant = quant;
            model::synth_model(o);
            CpuRunner r(o.out_dir, 2);
            const std::vector<int32_t> p = prompt(9, 1, r.config().vocab_size);
            const std::vector<float> weight_only = prefill_all(r, p);
            r.set_fp8_activation_rounding(10);  // 9 tokens: below
            QCOMPARE(max_abs_diff(prefill_all(r, p), weight_only), 0.0f);
            r.set_fp8_activation_rounding(3);
            const std::vector<float> w8a8 = prefill_all(r, p);
            if (!QString(quant).startsWith("fp8")) {  // nothing is fp8
                QCOMPARE(max_abs_diff(w8a8, weight_only), 0.0f);
                continue;
            }
            double num = 0, den = 0;
            for (std::size_t i = 0; i < w8a8.size(); ++i)
                num += double(w8a8[i] - weight_only[i]) * (w8a8[i] - weight_only[i]),
                    den += double(weight_only[i]) * weight_only[i];
            const double rel = std::sqrt(num / den);
            qInfo("%s: W8A8 against weight-only logits: rel-L2 %.2e", quant, rel);
            QVERIFY(rel > 1e-3 && rel < 0.3);  // e4m3 inputs: a few percent, not nothing, not noise
        }
    }
    void rejects_bad_lora() {
        CpuRunner r(dir("tiny"), 1);
        r.configure_lora_slots(1, 4);
        QVERIFY_THROWS_EXCEPTION(Error, r.load_lora_slot(1, random_lora(r.config(), 8, 1.0f, 1, false)));  // rank > max
        QVERIFY_THROWS_EXCEPTION(Error, r.load_lora_slot(2, random_lora(r.config(), 2, 1.0f, 1, false)));  // no slot 2
        LoraWeights wrong = random_lora(r.config(), 2, 1.0f, 1, false);
        wrong.layers.pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, r.load_lora_slot(1, wrong));
        LoraWeights bad_shape = random_lora(r.config(), 2, 1.0f, 1, false);
        bad_shape.layers[0][0].a.pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, r.load_lora_slot(1, bad_shape));
    }
};

QTEST_GUILESS_MAIN(TstCpuRunner)
#include "tst_cpu_runner.moc"
