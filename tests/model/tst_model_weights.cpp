// engine/model: ModelWeights validation messages and synthetic checkpoints (all tiny presets, sharding,
// --tokenizer sizing).
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint_edit.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "model/model_weights.h"
#include "model/safetensors.h"
#include "model/synth_model.h"

using namespace loradesk;
using namespace loradesk::model;
namespace fs = std::filesystem;

class TstModelWeights : public QObject {
    Q_OBJECT
  private slots:
    void presets_load_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("dtype");
        for (const char* p : {"tiny", "tiny-llama", "tiny-qwen2", "tiny-mistral"}) QTest::newRow(p) << p << "bf16";
        QTest::newRow("tiny f32") << "tiny"
                                  << "f32";
        QTest::newRow("tiny f16") << "tiny"
                                  << "f16";
    }
    void presets_load() {
        QFETCH(QString, preset);
        QFETCH(QString, dtype);
        QTemporaryDir tmp;
        SynthOptions o;
        o.preset = preset.toStdString();
        o.out_dir = tmp.path().toStdString();
        o.dtype = dtype == "f32" ? DType::f32 : dtype == "f16" ? DType::f16 : DType::bf16;
        ModelConfig c = synth_model(o);
        ModelWeights w(o.out_dir);
        QCOMPARE(w.config().arch, c.arch);
        QCOMPARE(w.embed().dtype, o.dtype);
        QCOMPARE(w.n_layers(), c.n_layers);
        QCOMPARE(&w.lm_head() == &w.embed(), c.tie_word_embeddings);
        QCOMPARE(w.layer(0).q_norm != nullptr, c.qk_norm);
        QCOMPARE(w.layer(0).q_bias != nullptr, c.qkv_bias);
        int64_t expected = int64_t(c.vocab_size) * c.hidden_size * (c.tie_word_embeddings ? 1 : 2) + c.hidden_size;
        QVERIFY(w.parameter_count() > expected);
        for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
            QVERIFY(fs::exists(fs::path(o.out_dir) / f));
        auto tok = nlohmann::json::parse(read_text_file(o.out_dir + "/tokenizer.json"));
        QVERIFY(tok["model"]["merges"].size() >= 200);
        QVERIFY(c.vocab_size >= int(tok["model"]["vocab"].size() + tok["added_tokens"].size()));
        QCOMPARE(c.eos_token_ids.size(), std::size_t(1));
        QCOMPARE(tok["added_tokens"][2]["content"].get<std::string>(), std::string("<|im_end|>"));
        QCOMPARE(tok["added_tokens"][2]["id"].get<int>(), c.eos_token_ids[0]);
    }
    void deterministic_by_seed() {
        QTemporaryDir a, b, d;
        SynthOptions o;
        o.out_dir = a.path().toStdString();
        synth_model(o);
        o.out_dir = b.path().toStdString();
        synth_model(o);
        o.out_dir = d.path().toStdString();
        o.seed = 7;
        synth_model(o);
        auto bytes = [](const QTemporaryDir& t) {
            return read_text_file(t.path().toStdString() + "/model.safetensors");
        };
        QCOMPARE(bytes(a), bytes(b));
        QVERIFY(bytes(a) != bytes(d));
    }
    void sharded() {
        QTemporaryDir tmp;
        SynthOptions o;
        o.out_dir = tmp.path().toStdString();
        o.max_shard_bytes = 400 * 1024;
        synth_model(o);
        QVERIFY(fs::exists(fs::path(o.out_dir) / "model.safetensors.index.json"));
        QVERIFY(!fs::exists(fs::path(o.out_dir) / "model.safetensors"));
        ModelWeights w(o.out_dir);  // loads through the index
        QCOMPARE(w.n_layers(), 3);
    }
    void tokenizer_sizes_vocab() {
        QTemporaryDir src, out;
        nlohmann::json tok = {
            {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", nlohmann::json::array()}}},
            {"added_tokens", {{{"id", 130}, {"content", "</s>"}}}}};
        write_text_file(src.path().toStdString() + "/tokenizer.json", tok.dump());
        write_text_file(src.path().toStdString() + "/tokenizer_config.json", R"({"eos_token":"</s>"})");
        SynthOptions o;
        o.preset = "tiny-llama";
        o.out_dir = out.path().toStdString();
        o.tokenizer_dir = src.path().toStdString();
        ModelConfig c = synth_model(o);
        QCOMPARE(c.vocab_size, 192);  // 131 rounded up to 64
        QCOMPARE(c.eos_token_ids, std::vector<int>{130});
    }
    void missing_tensor() {
        QTemporaryDir tmp;
        SynthOptions o;
        o.out_dir = tmp.path().toStdString();
        synth_model(o);
        testing::rewrite_checkpoint(o.out_dir,
                                    [](std::string& n, DType&, std::vector<int64_t>&, std::vector<uint8_t>&) {
                                        return n != "model.layers.1.mlp.up_proj.weight";
                                    });
        std::string msg = testing::weights_error(o.out_dir);
        QVERIFY2(QString::fromStdString(msg).contains("has no tensor 'model.layers.1.mlp.up_proj.weight'"),
                 msg.c_str());
    }
    void wrong_shape() {
        QTemporaryDir tmp;
        SynthOptions o;
        o.out_dir = tmp.path().toStdString();
        synth_model(o);
        testing::rewrite_checkpoint(o.out_dir,
                                    [](std::string& n, DType&, std::vector<int64_t>& shape, std::vector<uint8_t>&) {
                                        if (n == "model.layers.0.self_attn.k_proj.weight")
                                            std::swap(shape[0], shape[1]);
                                        return true;
                                    });
        std::string msg = testing::weights_error(o.out_dir);
        QVERIFY2(
            QString::fromStdString(msg).contains("k_proj.weight") && QString::fromStdString(msg).contains("[128, 96]"),
            msg.c_str());
    }
    void wrong_dtype() {
        QTemporaryDir tmp;
        SynthOptions o;
        o.out_dir = tmp.path().toStdString();
        synth_model(o);
        testing::rewrite_checkpoint(o.out_dir,
                                    [](std::string& n, DType& dtype, std::vector<int64_t>&, std::vector<uint8_t>&) {
                                        if (n == "model.norm.weight") dtype = DType::i16;
                                        return true;
                                    });
        std::string msg = testing::weights_error(o.out_dir);
        QVERIFY2(
            QString::fromStdString(msg).contains("model.norm.weight") && QString::fromStdString(msg).contains("I16"),
            msg.c_str());
    }
    void no_config() {
        QTemporaryDir tmp;
        QVERIFY(QString::fromStdString(testing::weights_error(tmp.path().toStdString())).contains("config.json"));
    }
};

QTEST_GUILESS_MAIN(TstModelWeights)
#include "tst_model_weights.moc"
