// engine/lora adapter_loader + summarize_adapter: tensor-driven loading, conversion, scales, the
// fail-closed bad-adapter cases (each with its message), and digest stability / sensitivity.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "lora/adapter_loader.h"
#include "lora/adapter_summary.h"
#include "lora_fixtures.h"

using namespace loradesk;
using namespace loradesk::lora;
using namespace loradesk::lora::testing;
using runtime::LoraModule;
namespace fs = std::filesystem;

using Mutation = std::function<void(const std::string& dir)>;
Q_DECLARE_METATYPE(Mutation)
Q_DECLARE_METATYPE(loradesk::DType)

namespace {

void edit_config(const std::string& dir, const std::function<void(nlohmann::json&)>& fn) {
    auto j = read_config(dir);
    fn(j);
    write_config(dir, j);
}

// Copies every tensor except those for which skip(name) is true, then adds extra tensors.
Mutation drop_tensor(std::string needle) {
    return [needle](const std::string& dir) {
        rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
            for (auto& t : ts)
                if (t.name.find(needle) == std::string::npos) w.add(t.name, t.dtype, t.shape, bytes_of(t));
        });
    };
}

Mutation add_tensor(std::string name, std::vector<int64_t> shape, DType dtype = DType::f32) {
    return [name, shape, dtype](const std::string& dir) {
        rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
            for (auto& t : ts) w.add(t.name, t.dtype, t.shape, bytes_of(t));
            std::size_t n = dtype_size(dtype);
            for (auto d : shape) n *= std::size_t(d);
            w.add(name, dtype, shape, std::vector<uint8_t>(n, 0));
        });
    };
}

const std::string kQ0 = "base_model.model.model.layers.0.self_attn.q_proj";

}  // namespace

class TstAdapterLoader : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;

  private slots:
    void loads_weights_and_scales() {
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.alpha = 8;
        spec.targets = {LoraModule::q, LoraModule::o, LoraModule::down};
        spec.layers = {0, 2};
        spec.rank_pattern = {{"down_proj", 2}};
        spec.alpha_pattern = {{"o_proj", 2}};
        spec.dtype = DType::bf16;
        std::string dir = write_synth(m_tmp, "load_basic", spec);
        auto base = tiny_base();
        runtime::LoraWeights w = load_adapter(dir, base, 16);
        QCOMPARE(int(w.layers.size()), base.n_layers);
        QCOMPARE(w.layers[1][int(LoraModule::q)].rank, 0);  // layer 1 not transformed
        QCOMPARE(w.layers[0][int(LoraModule::k)].rank, 0);  // k not targeted
        auto& q = w.layers[2][int(LoraModule::q)];
        QCOMPARE(q.rank, 4);
        QCOMPARE(q.scale, 2.0f);
        QCOMPARE(int(q.a.size()), 4 * base.hidden_size);
        QCOMPARE(int(q.b.size()), base.q_dim() * 4);
        QCOMPARE(w.layers[0][int(LoraModule::o)].scale, 0.5f);
        QCOMPARE(w.layers[0][int(LoraModule::o)].a.size(), std::size_t(4 * base.q_dim()));
        QCOMPARE(w.layers[0][int(LoraModule::down)].rank, 2);
        QCOMPARE(w.layers[0][int(LoraModule::down)].scale, 4.0f);
        QCOMPARE(w.max_rank(), 4);
        // Values are the stored bf16 values, converted exactly.
        model::SafetensorsFile f(dir + "/adapter_model.safetensors");
        auto* b = f.find("base_model.model.model.layers.2.self_attn.q_proj.lora_B.weight");
        QVERIFY(b);
        QCOMPARE(b->to_f32(), q.b);
        bool nonzero = false;
        for (float x : q.b) nonzero = nonzero || x != 0.0f;
        QVERIFY(nonzero);
    }

    // The one-pass conversion (no zero fill) must give exactly what convert_to_f32 gives, for every
    // float dtype, every module and both factors, including unaligned tensor data in the file.
    void converts_every_float_dtype_data() {
        QTest::addColumn<DType>("dtype");
        QTest::newRow("bf16") << DType::bf16;
        QTest::newRow("f16") << DType::f16;
        QTest::newRow("f32") << DType::f32;
    }

    void converts_every_float_dtype() {
        QFETCH(DType, dtype);
        SynthAdapterSpec spec;
        spec.rank = 3;  // odd rank: odd element counts, so tensors after the first start unaligned
        spec.dtype = dtype;
        spec.seed = 11;
        std::string dir = write_synth(m_tmp, "dtype_" + std::string(dtype_name(dtype)), spec);
        runtime::LoraWeights w = load_adapter(dir, tiny_base(), 16);
        AdapterPlan plan = plan_adapter(dir, nullptr, 0);
        QVERIFY(!plan.modules.empty());
        for (auto& m : plan.modules) {
            auto& d = w.layers[std::size_t(m.layer)][int(m.module)];
            QCOMPARE(m.a->dtype, dtype);
            QCOMPARE(d.a, m.a->to_f32());
            QCOMPARE(d.b, m.b->to_f32());
            QCOMPARE(d.a.size(), d.a.capacity());  // sized exactly, not grown
        }
    }

    // Converting into an evicted adapter's weights gives exactly a fresh load, whatever they held:
    // modules the new adapter lacks are emptied, smaller and larger ranks both work.
    void reuse_gives_a_fresh_load() {
        SynthAdapterSpec full;
        full.rank = 4;
        full.dtype = DType::bf16;
        full.seed = 5;
        SynthAdapterSpec part;
        part.rank = 2;
        part.targets = {LoraModule::q, LoraModule::down};
        part.layers = {1};
        part.dtype = DType::f16;
        part.seed = 6;
        std::string dir_full = write_synth(m_tmp, "reuse_full", full),
                    dir_part = write_synth(m_tmp, "reuse_part", part);
        auto same = [](const runtime::LoraWeights& x, const runtime::LoraWeights& y) {
            if (x.layers.size() != y.layers.size()) return false;
            for (std::size_t l = 0; l < x.layers.size(); ++l)
                for (int m = 0; m < runtime::kNumLoraModules; ++m) {
                    auto &p = x.layers[l][m], &q = y.layers[l][m];
                    if (p.rank != q.rank || p.scale != q.scale || p.a != q.a || p.b != q.b) return false;
                }
            return true;
        };
        runtime::LoraWeights fresh_part = load_adapter(dir_part, tiny_base(), 16);
        runtime::LoraWeights fresh_full = load_adapter(dir_full, tiny_base(), 16);
        runtime::LoraWeights old = load_adapter(dir_full, tiny_base(), 16);
        const float* kept = old.layers[1][int(LoraModule::q)].a.data();
        runtime::LoraWeights small = load_adapter(dir_part, tiny_base(), 16, nullptr, &old);
        QVERIFY(same(small, fresh_part));
        QCOMPARE(small.layers[1][int(LoraModule::q)].a.data(), kept);                // overwritten in place
        QCOMPARE(small.layers[0][int(LoraModule::k)].a.capacity(), std::size_t(0));  // emptied
        runtime::LoraWeights big = load_adapter(dir_full, tiny_base(), 16, nullptr, &small);
        QVERIFY(same(big, fresh_full));
    }

    void parallel_conversion_matches_serial() {
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.dtype = DType::bf16;
        spec.seed = 3;
        std::string dir = write_synth(m_tmp, "parallel", spec);
        runtime::LoraWeights serial = load_adapter(dir, tiny_base(), 16);
        ThreadPool pool(3);
        runtime::LoraWeights parallel = load_adapter(dir, tiny_base(), 16, &pool);
        for (std::size_t l = 0; l < serial.layers.size(); ++l)
            for (int m = 0; m < runtime::kNumLoraModules; ++m) {
                QCOMPARE(parallel.layers[l][m].a, serial.layers[l][m].a);
                QCOMPARE(parallel.layers[l][m].b, serial.layers[l][m].b);
                QCOMPARE(parallel.layers[l][m].scale, serial.layers[l][m].scale);
            }
    }

    void rslora_and_fan_in_fan_out() {
        SynthAdapterSpec spec;
        spec.rank = 16;
        spec.alpha = 8;
        spec.rslora = true;
        spec.fan_in_fan_out = true;
        spec.targets = {LoraModule::v};
        std::string dir = write_synth(m_tmp, "rslora", spec);
        runtime::LoraWeights w = load_adapter(dir, tiny_base(), 16);
        QCOMPARE(w.layers[1][int(LoraModule::v)].scale, 2.0f);  // 8 / sqrt(16)
        // fan_in_fan_out does not change nn.Linear math in PEFT: A and B are used as stored.
        model::SafetensorsFile f(dir + "/adapter_model.safetensors");
        QCOMPARE(f.find("base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight")->to_f32(),
                 w.layers[1][int(LoraModule::v)].a);
    }

    void bad_adapters_data() {
        QTest::addColumn<Mutation>("mutate");
        QTest::addColumn<int>("max_rank");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing lora_B")
            << drop_tensor("layers.1.self_attn.q_proj.lora_B") << 16
            << "'base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight' has no matching lora_B";
        QTest::newRow("missing lora_A") << drop_tensor("layers.2.mlp.up_proj.lora_A") << 16 << "has no matching lora_A";
        QTest::newRow("rank above limit") << Mutation([](const std::string&) {}) << 2 << "exceeds --max-lora-rank 2";
        QTest::newRow("dora magnitude") << add_tensor(kQ0 + ".lora_magnitude_vector", {24}) << 16 << "DoRA";
        QTest::newRow("lora bias") << add_tensor(kQ0 + ".lora_B.bias", {24}) << 16 << "lora_bias=true";
        QTest::newRow("modules_to_save copy") << add_tensor("base_model.model.lm_head.weight", {64, 16}) << 16
                                              << "'base_model.model.lm_head.weight' is a full module copy";
        QTest::newRow("embedding lora") << add_tensor("base_model.model.model.embed_tokens.lora_embedding_A", {4, 64})
                                        << 16 << "embedding/lm_head LoRA";
        QTest::newRow("lm_head lora") << add_tensor("base_model.model.lm_head.lora_A.weight", {4, 16}) << 16
                                      << "embedding/lm_head LoRA";
        QTest::newRow("unknown key")
            << add_tensor("base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight", {4, 16}) << 16
            << "tensor 'base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight' is not";
        QTest::newRow("layer beyond base")
            << add_tensor("base_model.model.model.layers.7.mlp.up_proj.lora_A.weight", {4, 16}) << 16
            << "has no matching lora_B";
        QTest::newRow("wrong in_features") << Mutation([](const std::string& dir) {
            rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts)
                    if (t.name.find("o_proj.lora_A") != std::string::npos)
                        w.add_f32_as(t.name, DType::f32, {4, 16}, std::vector<float>(64, 0.5f));
                    else
                        w.add(t.name, t.dtype, t.shape, bytes_of(t));
            });
        }) << 16 << "targets o_proj with in_features 16 but the base model has 24 (is it for another base model?)";
        QTest::newRow("wrong out_features") << Mutation([](const std::string& dir) {
            rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts)
                    if (t.name.find("k_proj.lora_B") != std::string::npos)
                        w.add_f32_as(t.name, DType::f32, {24, 4}, std::vector<float>(96, 0.5f));
                    else
                        w.add(t.name, t.dtype, t.shape, bytes_of(t));
            });
        }) << 16 << "targets k_proj with out_features 24 but the base model has 12 (is it for another base model?)";
        QTest::newRow("rank mismatch A/B") << Mutation([](const std::string& dir) {
            rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts)
                    if (t.name == kQ0 + ".lora_B.weight")
                        w.add_f32_as(t.name, DType::f32, {24, 3}, std::vector<float>(72, 0.5f));
                    else
                        w.add(t.name, t.dtype, t.shape, bytes_of(t));
            });
        }) << 16 << "rank mismatch in model.layers.0.self_attn.q_proj";
        QTest::newRow("config rank disagrees") << Mutation([](const std::string& dir) {
            edit_config(dir, [](nlohmann::json& j) { j["rank_pattern"] = {{"v_proj", 2}}; });
        }) << 16 << "model.layers.0.self_attn.v_proj has rank 4 but adapter_config.json says 2";
        QTest::newRow("untargeted tensor") << Mutation([](const std::string& dir) {
            edit_config(dir, [](nlohmann::json& j) { j["exclude_modules"] = {"gate_proj"}; });
        }) << 16 << "which adapter_config.json does not target";
        QTest::newRow("dora config") << Mutation([](const std::string& dir) {
            edit_config(dir, [](nlohmann::json& j) { j["use_dora"] = true; });
        }) << 16 << "use_dora is true";
        QTest::newRow("pickle only") << Mutation([](const std::string& dir) {
            fs::rename(dir + "/adapter_model.safetensors", dir + "/adapter_model.bin");
        }) << 16 << "only adapter_model.bin (a Python pickle)";
        QTest::newRow("no tensors file") << Mutation([](const std::string& dir) {
            fs::remove(dir + "/adapter_model.safetensors");
        }) << 16 << "no adapter_model.safetensors";
        QTest::newRow("no config") << Mutation([](const std::string& dir) { fs::remove(dir + "/adapter_config.json"); })
                                   << 16 << "no adapter_config.json";
        QTest::newRow("integer dtype") << Mutation([](const std::string& dir) {
            rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts)
                    if (t.name == kQ0 + ".lora_A.weight")
                        w.add(t.name, DType::i32, t.shape, std::vector<uint8_t>(t.nbytes, 0));
                    else
                        w.add(t.name, t.dtype, t.shape, bytes_of(t));
            });
        }) << 16 << "dtype I32";
        auto poison = [](float value) {
            return Mutation([value](const std::string& dir) {
                rewrite_tensors(dir, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                    for (auto& t : ts)
                        if (t.name == kQ0 + ".lora_B.weight") {
                            std::vector<float> v = t.to_f32();
                            v[5] = value;
                            w.add_f32_as(t.name, DType::f32, t.shape, v);
                        } else {
                            w.add(t.name, t.dtype, t.shape, bytes_of(t));
                        }
                });
            });
        };
        QTest::newRow("NaN weights") << poison(std::nanf("")) << 16 << "lora_B.weight' holds NaN values at element 5";
        QTest::newRow("Inf weights") << poison(INFINITY) << 16 << "holds infinite values";
        QTest::newRow("empty file") << drop_tensor("base_model") << 16 << "contains no LoRA tensors";
        QTest::newRow("truncated file") << Mutation([](const std::string& dir) {
            fs::resize_file(dir + "/adapter_model.safetensors", 100);
        }) << 16 << "adapter_model.safetensors";
    }
    void bad_adapters() {
        QFETCH(Mutation, mutate);
        QFETCH(int, max_rank);
        QFETCH(QString, message);
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.alpha = 8;
        std::string dir = write_synth(m_tmp, std::string("bad_") + QTest::currentDataTag(), spec);
        mutate(dir);
        try {
            load_adapter(dir, tiny_base(), max_rank);
            QFAIL("expected an error");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }

    void layer_beyond_base_with_pair() {
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.targets = {LoraModule::up};
        auto big = tiny_base();
        big.n_layers = 5;
        std::string dir = write_synth(m_tmp, "deep", spec, big);
        QVERIFY_THROWS_EXCEPTION(ExpectedError, load_adapter(dir, tiny_base(), 16));
        try {
            load_adapter(dir, tiny_base(), 16);
        } catch (const ExpectedError& e) {
            QVERIFY2(QString(e.what()).contains(
                         "is for layer 3 but the base model has 3 layers (is it for another base model?)"),
                     e.what());
        }
    }

    void digest_stable_under_rename_and_copy() {
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.seed = 7;
        std::string a = write_synth(m_tmp, "digest_a", spec);
        AdapterSummary s1 = summarize_adapter(a);
        std::string b = (fs::path(m_tmp.path().toStdString()) / "renamed_b").string();
        fs::rename(a, b);
        AdapterSummary s2 = summarize_adapter(b);
        QCOMPARE(s1.digest, s2.digest);
        QCOMPARE(s2.name, std::string("renamed_b"));
        QCOMPARE(s1.digest.size(), std::size_t(64));
        // Informational fields do not change the math and do not change identity.
        edit_config(b, [](nlohmann::json& j) {
            j["base_model_name_or_path"] = "elsewhere/model";
            j["lora_dropout"] = 0.3;
            j["target_modules"] = "all-linear";
        });
        QCOMPARE(summarize_adapter(b).digest, s1.digest);
        // An equivalent scale spelled differently (alpha 16 == alpha_pattern 16 on every module) agrees.
        edit_config(b, [](nlohmann::json& j) {
            j["lora_alpha"] = 3;
            j["alpha_pattern"] = {{"proj", 999}, {".*_proj", 16}};
        });
        QCOMPARE(summarize_adapter(b).digest, s1.digest);
    }

    void digest_sensitivity_data() {
        QTest::addColumn<Mutation>("mutate");
        QTest::newRow("alpha") << Mutation(
            [](const std::string& d) { edit_config(d, [](nlohmann::json& j) { j["lora_alpha"] = 9; }); });
        QTest::newRow("rslora") << Mutation(
            [](const std::string& d) { edit_config(d, [](nlohmann::json& j) { j["use_rslora"] = true; }); });
        QTest::newRow("alpha pattern") << Mutation([](const std::string& d) {
            edit_config(d, [](nlohmann::json& j) { j["alpha_pattern"] = {{"layers.2.mlp.down_proj", 4}}; });
        });
        QTest::newRow("one weight bit") << Mutation([](const std::string& d) {
            rewrite_tensors(d, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts) {
                    auto bytes = bytes_of(t);
                    if (t.name.find("layers.1.mlp.gate_proj.lora_B") != std::string::npos) bytes[5] ^= 1;
                    w.add(t.name, t.dtype, t.shape, bytes);
                }
            });
        });
        QTest::newRow("dropped module") << drop_tensor("layers.2.self_attn.k_proj");
        QTest::newRow("dtype") << Mutation([](const std::string& d) {
            rewrite_tensors(d, [&](model::SafetensorsWriter& w, const std::vector<model::TensorView>& ts) {
                for (auto& t : ts) w.add_f32_as(t.name, DType::bf16, t.shape, t.to_f32());
            });
        });
    }
    void digest_sensitivity() {
        QFETCH(Mutation, mutate);
        SynthAdapterSpec spec;
        spec.rank = 4;
        spec.alpha = 8;
        spec.dtype = DType::f32;  // so that the "dtype" row's bf16 rewrite changes the bytes
        std::string dir = write_synth(m_tmp, std::string("sens_") + QTest::currentDataTag(), spec);
        std::string before = summarize_adapter(dir).digest;
        mutate(dir);
        QVERIFY(summarize_adapter(dir).digest != before);
    }

    void summary_fields() {
        SynthAdapterSpec spec;
        spec.rank = 8;
        spec.alpha = 32;
        spec.rslora = true;
        spec.targets = {LoraModule::v, LoraModule::q};
        spec.layers = {2, 0};
        spec.rank_pattern = {{"v_proj", 2}};
        spec.dtype = DType::bf16;
        spec.base_model = "Qwen/Qwen3-0.6B";
        std::string dir = write_synth(m_tmp, "summary", spec);
        AdapterSummary s = summarize_adapter(dir);
        QCOMPARE(s.name, std::string("summary"));
        QVERIFY(fs::path(s.path).is_absolute());
        QCOMPARE(s.base_model, std::string("Qwen/Qwen3-0.6B"));
        QCOMPARE(s.rank, 8);
        QCOMPARE(s.alpha, 32.0f);
        QVERIFY(s.rslora);
        QCOMPARE(s.targets, (std::vector<std::string>{"q_proj", "v_proj"}));
        QCOMPARE(s.layers, (std::vector<int>{0, 2}));
        QCOMPARE(s.dtype, std::string("BF16"));
        QCOMPARE(s.size_bytes, std::size_t(fs::file_size(dir + "/adapter_model.safetensors")));
    }
};

QTEST_GUILESS_MAIN(TstAdapterLoader)
#include "tst_adapter_loader.moc"
