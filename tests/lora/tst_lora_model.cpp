// Whole-model LoRA tests on the CPU runner, for the tiny presets of all four architectures: a PEFT
// adapter loaded by engine/lora equals the base checkpoint with W + s·B·A merged in (computed here,
// from the adapter files and the scale the PEFT rules give), for rank/alpha patterns, rsLoRA, target
// subsets, layers_to_transform and fan_in_fan_out; and a batch mixing adapters placed in slots by
// the TieredStore equals each request run alone.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "lora/adapter_loader.h"
#include "lora/adapter_registry.h"
#include "lora/adapter_synth.h"
#include "lora/tiered_store.h"
#include "model/safetensors.h"
#include "model/synth_model.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/sequence_driver.h"

using namespace loradesk;
using namespace loradesk::lora;
using loradesk::runtime::LoraModule;
using loradesk::runtime::SequenceDriver;
using loradesk::runtime::cpu::CpuRunner;
namespace fs = std::filesystem;

namespace {

const char* const kPresets[] = {"tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"};

std::vector<int32_t> prompt(int len, int salt, int vocab) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(int32_t((i * 53 + salt * 97 + 5) % vocab));
    return p;
}

std::vector<float> prefill_all(CpuRunner& r, const std::vector<int32_t>& p, int slot = 0) {
    SequenceDriver d(r, 32, 4);
    std::vector<float> out;
    d.step({{d.add_sequence(slot), p}}, true, out);
    return out;
}

float max_abs(const std::vector<float>& a) {
    float m = 0;
    for (float v : a) m = std::max(m, std::fabs(v));
    return m;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    float d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// "default=2 v_proj=8": the scale the PEFT rules give each projection (worked out by hand per row).
float expected_scale(const QString& table, const std::string& proj) {
    float fallback = 0;
    for (const QString& item : table.split(' ', Qt::SkipEmptyParts)) {
        auto kv = item.split('=');
        if (kv[0].toStdString() == proj) return kv[1].toFloat();
        if (kv[0] == "default") fallback = kv[1].toFloat();
    }
    return fallback;
}

// Writes base + s·B·A for every adapted projection as a new f32 checkpoint next to the base's files.
void write_merged(const std::string& base, const std::string& adapter, const QString& scales, const std::string& out) {
    fs::create_directories(out);
    for (auto& e : fs::directory_iterator(base))
        if (e.path().extension() != ".safetensors" && e.path().filename() != "model.safetensors.index.json")
            fs::copy_file(e.path(), fs::path(out) / e.path().filename(), fs::copy_options::overwrite_existing);
    model::SafetensorsCheckpoint ckpt(base);
    model::SafetensorsFile lora(adapter + "/adapter_model.safetensors");
    model::SafetensorsWriter w;
    for (const std::string& name : ckpt.names()) {
        const model::TensorView& t = ckpt.get(name);
        std::vector<float> v = t.to_f32();
        const std::string stem = name.substr(0, name.size() - std::string(".weight").size());
        const model::TensorView* a = lora.find("base_model.model." + stem + ".lora_A.weight");
        const model::TensorView* b = lora.find("base_model.model." + stem + ".lora_B.weight");
        if (a && b) {
            std::vector<float> af = a->to_f32(), bf = b->to_f32();
            const int out_f = int(t.shape[0]), in_f = int(t.shape[1]), r = int(a->shape[0]);
            const double s = expected_scale(scales, stem.substr(stem.rfind('.') + 1));
            for (int o = 0; o < out_f; ++o)
                for (int i = 0; i < in_f; ++i) {
                    double acc = 0;
                    for (int k = 0; k < r; ++k)
                        acc += double(bf[std::size_t(o * r + k)]) * af[std::size_t(k * in_f + i)];
                    v[std::size_t(o) * in_f + i] += float(s * acc);
                }
        }
        w.add_f32_as(name, DType::f32, t.shape, v);
    }
    w.write(out + "/model.safetensors");
}

}  // namespace

Q_DECLARE_METATYPE(loradesk::lora::SynthAdapterSpec)

class TstLoraModel : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string dir(const QString& name) const { return (m_tmp.path() + "/" + name).toStdString(); }

  private slots:
    void initTestCase() {
        for (const char* p : kPresets) {
            model::SynthOptions o;
            o.preset = p;
            o.out_dir = dir(p);
            o.seed = 11;
            o.dtype = std::string(p) == "tiny" ? DType::f32 : DType::bf16;
            model::synth_model(o);
        }
    }

    void adapter_equals_merged_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<SynthAdapterSpec>("spec");
        QTest::addColumn<QString>("scales");
        for (const char* p : kPresets) {
            SynthAdapterSpec s;
            s.rank = 8, s.alpha = 16, s.rank_pattern = {{"v_proj", 2}, {"mlp.down_proj", 4}}, s.seed = 1;
            QTest::addRow("%s rank pattern", p) << p << s << "default=2 v_proj=8 down_proj=4";
            s = {};
            s.rank = 4, s.alpha = 8, s.rslora = true, s.alpha_pattern = {{"o_proj", 2}}, s.seed = 2,
            s.dtype = DType::bf16;
            QTest::addRow("%s rslora alpha pattern bf16", p) << p << s << "default=4 o_proj=1";
            s = {};
            s.rank = 4, s.alpha = 4, s.targets = {LoraModule::q, LoraModule::k, LoraModule::gate}, s.seed = 3;
            QTest::addRow("%s target subset", p) << p << s << "default=1";
            s = {};
            s.rank = 4, s.alpha = 8, s.targets = {LoraModule::up, LoraModule::o}, s.layers = {1}, s.seed = 4;
            QTest::addRow("%s layers_to_transform", p) << p << s << "default=2";
            s = {};
            s.rank = 2, s.alpha = 2, s.fan_in_fan_out = true, s.seed = 5;
            QTest::addRow("%s fan_in_fan_out", p) << p << s << "default=1";
        }
    }
    void adapter_equals_merged() {
        QFETCH(QString, preset);
        QFETCH(SynthAdapterSpec, spec);
        QFETCH(QString, scales);
        const std::string tag = QString(QTest::currentDataTag()).replace(' ', '_').toStdString();
        const std::string base = dir(preset), adapter = dir("adapter_" + QString::fromStdString(tag)),
                          merged = dir("merged_" + QString::fromStdString(tag));
        CpuRunner r(base, 2);
        synthesize_adapter(r.config(), spec, adapter);
        write_merged(base, adapter, scales, merged);
        r.configure_lora_slots(1, 8);
        r.load_lora_slot(1, load_adapter(adapter, r.config(), 8));
        CpuRunner m(merged, 2);
        const std::vector<int32_t> p = prompt(9, 3, r.config().vocab_size);
        const std::vector<float> with_lora = prefill_all(r, p, 1), with_merged = prefill_all(m, p),
                                 base_logits = prefill_all(r, p);
        const float scale = max_abs(with_merged);
        QVERIFY2(max_abs_diff(with_lora, with_merged) <= 1e-4f * scale,
                 qPrintable(
                     QString("max |diff| %1 vs max |logit| %2").arg(max_abs_diff(with_lora, with_merged)).arg(scale)));
        QVERIFY2(max_abs_diff(with_lora, base_logits) > 1e-2f * scale, "the adapter had no visible effect");
    }

    void mixed_batch_through_the_store() {
        // Registry + disk loader + TieredStore place three adapters; one batch mixes them with base
        // requests (grouped by slot), and every row equals that request run alone.
        const std::string base = dir("tiny-llama");
        CpuRunner r(base, 2);
        AdapterRegistry registry;
        std::vector<std::string> names;
        for (int i = 0; i < 3; ++i) {
            SynthAdapterSpec s;
            s.rank = 2 + 2 * i, s.alpha = 8, s.rslora = i == 1, s.seed = uint64_t(40 + i);
            if (i == 2) s.targets = {LoraModule::v, LoraModule::down};
            std::string d = dir("mixed_" + QString::number(i));
            synthesize_adapter(r.config(), s, d);
            registry.add_folder("mixed" + std::to_string(i), d);
            names.push_back("mixed" + std::to_string(i));
        }
        TieredStore store(r, make_disk_loader(registry, r.config(), 8), {3, 8, 4, std::size_t(1) << 30, 0});
        std::vector<std::string> digests;
        for (auto& n : names) digests.push_back(registry.find(n)->summary.digest);
        auto grants = store.acquire_slots(digests);
        std::vector<int> slot;
        for (auto& g : grants) {
            QCOMPARE(g.state, Residency::ready);
            slot.push_back(g.slot);
        }
        const int V = r.config().vocab_size;
        // Requests: base, adapter 0 twice, adapter 1, adapter 2 — grouped by slot as the scheduler does.
        struct Req {
            int slot;
            std::vector<int32_t> tokens;
        };
        std::vector<Req> reqs = {{0, prompt(5, 1, V)},
                                 {slot[0], prompt(7, 2, V)},
                                 {slot[0], prompt(3, 3, V)},
                                 {slot[1], prompt(6, 4, V)},
                                 {slot[2], prompt(8, 5, V)}};
        std::sort(reqs.begin(), reqs.end(), [](const Req& a, const Req& b) { return a.slot < b.slot; });
        std::vector<float> expected;
        for (auto& q : reqs) {
            std::vector<float> alone = prefill_all(r, q.tokens, q.slot);
            expected.insert(expected.end(), alone.begin(), alone.end());
        }
        SequenceDriver d(r, 64, 4);
        std::vector<SequenceDriver::Work> work;
        for (auto& q : reqs) work.push_back({d.add_sequence(q.slot), q.tokens});
        std::vector<float> out;
        d.step(work, true, out);
        QVERIFY(max_abs_diff(out, expected) <= 1e-5f * max_abs(expected));
        // And the adapters really differ from each other and from the base.
        QVERIFY(max_abs_diff(prefill_all(r, reqs[0].tokens, slot[0]), prefill_all(r, reqs[0].tokens, slot[1])) > 1e-3f);
        QVERIFY(max_abs_diff(prefill_all(r, reqs[0].tokens, 0), prefill_all(r, reqs[0].tokens, slot[2])) > 1e-3f);
    }

    void disk_loader_refuses_stale_or_unknown() {
        const std::string base = dir("tiny");
        CpuRunner r(base, 2);
        AdapterRegistry registry;
        SynthAdapterSpec s;
        s.rank = 4, s.targets = {LoraModule::q};
        const std::string d = dir("stale");
        synthesize_adapter(r.config(), s, d);
        const std::string digest = registry.add_folder("stale", d).summary.digest;
        AdapterLoadFn load = make_disk_loader(registry, r.config(), 8);
        QCOMPARE(load(digest, nullptr).max_rank(), 4);
        // Rewritten in place with other content: the registered identity no longer describes the file.
        s.targets = {LoraModule::q, LoraModule::v};
        synthesize_adapter(r.config(), s, d);
        try {
            load(digest, nullptr);
            QFAIL("expected an error");
        } catch (const ExpectedError& e) {
            QVERIFY2(QString(e.what()).contains("changed on disk since it was registered; retry shortly"), e.what());
            QCOMPARE(e.code(), ErrorCode::unavailable);  // 503 with Retry-After: the watch registers the new content
        }
        QVERIFY_THROWS_EXCEPTION(ExpectedError, load(std::string(64, '0'), nullptr));
        // Reloading re-hashes: new content, new digest, and it loads.
        const std::string fresh = registry.add_folder("stale", d, OnTaken::replace).summary.digest;
        QVERIFY(fresh != digest);
        QCOMPARE(load(fresh, nullptr).layers[0][int(LoraModule::v)].rank, 4);
    }

    void disk_loader_reads_an_unchanged_copy() {
        // Two folders with the same content share a digest. Rewriting one in place with other weights of
        // the same size must never serve those weights under the old digest: the loader reads the
        // folder whose files still match the signature they were hashed with.
        const std::string base = dir("tiny");
        CpuRunner r(base, 2);
        AdapterRegistry registry;
        SynthAdapterSpec s;
        s.rank = 4, s.targets = {LoraModule::q}, s.seed = 7;
        const std::string a = dir("orig"), b = dir("copy");
        synthesize_adapter(r.config(), s, a);
        std::filesystem::copy(a, b, std::filesystem::copy_options::recursive);
        const std::string digest = registry.add_folder("orig", a).summary.digest;
        QCOMPARE(registry.add_folder("copy", b).summary.digest, digest);
        AdapterLoadFn load = make_disk_loader(registry, r.config(), 8);
        const auto expected = load(digest, nullptr).layers[0][int(LoraModule::q)].a;

        s.seed = 8;  // same shapes, other weights
        synthesize_adapter(r.config(), s, a);
        QCOMPARE(load(digest, nullptr).layers[0][int(LoraModule::q)].a, expected);  // read from the copy
        synthesize_adapter(r.config(), s, b);
        QVERIFY_THROWS_EXCEPTION(ExpectedError, load(digest, nullptr));  // no folder holds it any more
        const std::string fresh = registry.add_folder("copy", b, OnTaken::replace).summary.digest;
        QVERIFY(fresh != digest);
        QVERIFY(load(fresh, nullptr).layers[0][int(LoraModule::q)].a != expected);
    }
};

QTEST_GUILESS_MAIN(TstLoraModel)
#include "tst_lora_model.moc"
