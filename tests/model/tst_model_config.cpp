// engine/model: config.json parsing (every family, rope layouts, malformed input), weight validation
// (missing tensor, wrong shape, wrong dtype) and synthetic checkpoints round-tripping through both.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/safetensors.h"
#include "model/synth_model.h"

using namespace loradesk;
using namespace loradesk::model;
using json = nlohmann::json;

namespace {

json base_llama() {
    return json::parse(
        R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":1000,"hidden_size":256,
        "intermediate_size":512,"num_hidden_layers":2,"num_attention_heads":8,"rms_norm_eps":1e-5,"hidden_act":"silu"})");
}

}  // namespace

class TstModelConfig : public QObject {
    Q_OBJECT
  private slots:
    void families() {
        json q3 = base_llama();
        q3["architectures"] = {"Qwen3ForCausalLM"};
        q3["head_dim"] = 64;
        q3["num_key_value_heads"] = 2;
        ModelConfig c = parse_model_config(q3);
        QCOMPARE(c.arch, Architecture::qwen3);
        QVERIFY(c.qk_norm);
        QVERIFY(!c.qkv_bias);
        QCOMPARE(c.head_dim, 64);
        QCOMPARE(c.n_kv_heads, 2);

        json q2 = base_llama();
        q2["architectures"] = {"Qwen2ForCausalLM"};
        q2["use_sliding_window"] = false;
        q2["sliding_window"] = 32;
        c = parse_model_config(q2);
        QVERIFY(c.qkv_bias);
        QVERIFY(!c.o_bias);

        json l = base_llama();
        c = parse_model_config(l);
        QCOMPARE(c.n_kv_heads, 8);  // GQA default: = heads
        QCOMPARE(c.head_dim, 32);   // hidden / heads
        QCOMPARE(c.rope_theta, 10000.0f);
        l["attention_bias"] = true;
        l["mlp_bias"] = true;
        l["eos_token_id"] = json::array({5, 6});
        l["torch_dtype"] = "float16";
        c = parse_model_config(l);
        QVERIFY(c.qkv_bias && c.o_bias && c.mlp_bias);
        QCOMPARE(c.eos_token_ids, (std::vector<int>{5, 6}));
        QCOMPARE(c.dtype, DType::f16);

        json m = base_llama();
        m["architectures"] = {"MistralForCausalLM"};
        m["sliding_window"] = nullptr;
        m["dtype"] = "bfloat16";
        m["eos_token_id"] = 2;
        c = parse_model_config(m);
        QCOMPARE(c.arch, Architecture::mistral);
        QCOMPARE(c.eos_token_ids, std::vector<int>{2});
    }
    void rope_layouts_data() {
        QTest::addColumn<QString>("patch");
        QTest::addColumn<int>("type");
        QTest::addColumn<float>("factor");
        QTest::addColumn<float>("theta");
        QTest::newRow("none") << R"({"rope_scaling":null,"rope_theta":500000})" << int(RopeType::default_) << 1.0f
                              << 500000.0f;
        QTest::newRow("linear") << R"({"rope_scaling":{"rope_type":"linear","factor":2.0}})" << int(RopeType::linear)
                                << 2.0f << 10000.0f;
        QTest::newRow("legacy type") << R"({"rope_scaling":{"type":"linear","factor":4.0}})" << int(RopeType::linear)
                                     << 4.0f << 10000.0f;
        QTest::newRow("llama3")
            << R"({"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}})"
            << int(RopeType::llama3) << 8.0f << 10000.0f;
        QTest::newRow("v5 rope_parameters") << R"({"rope_parameters":{"rope_type":"default","rope_theta":1000000.0}})"
                                            << int(RopeType::default_) << 1.0f << 1e6f;
        QTest::newRow("v5 llama3")
            << R"({"rope_parameters":{"rope_type":"llama3","rope_theta":500000.0,"factor":32.0,"original_max_position_embeddings":8192}})"
            << int(RopeType::llama3) << 32.0f << 500000.0f;
    }
    void rope_layouts() {
        QFETCH(QString, patch);
        QFETCH(int, type);
        QFETCH(float, factor);
        QFETCH(float, theta);
        json j = base_llama();
        j.merge_patch(json::parse(patch.toStdString()));
        ModelConfig c = parse_model_config(j);
        QCOMPARE(int(c.rope_scaling.type), type);
        QCOMPARE(c.rope_scaling.factor, factor);
        QCOMPARE(c.rope_theta, theta);
    }
    void rejects_data() {
        QTest::addColumn<QString>("patch");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        const int unsup = int(ErrorCode::unsupported), bad = int(ErrorCode::corrupt_file);
        QTest::newRow("architecture") << R"({"architectures":["GPT2LMHeadModel"]})" << unsup
                                      << "supported: LlamaForCausalLM";
        QTest::newRow("no architectures") << R"({"architectures":null})" << bad << "architectures";
        QTest::newRow("yarn") << R"({"rope_scaling":{"rope_type":"yarn","factor":4.0}})" << unsup
                              << "supported: default, linear, llama3";
        QTest::newRow("sliding window")
            << R"({"architectures":["MistralForCausalLM"],"sliding_window":4096,"max_position_embeddings":32768})"
            << unsup << "sliding-window";
        QTest::newRow("qwen2 sliding")
            << R"({"architectures":["Qwen2ForCausalLM"],"use_sliding_window":true,"sliding_window":128})" << unsup
            << "sliding-window";
        QTest::newRow("gelu") << R"({"hidden_act":"gelu"})" << unsup << "silu";
        QTest::newRow("missing hidden") << R"({"hidden_size":null})" << bad << "hidden_size";
        QTest::newRow("negative layers") << R"({"num_hidden_layers":-1})" << bad << "num_hidden_layers";
        QTest::newRow("string vocab") << R"({"vocab_size":"1000"})" << bad << "vocab_size";
        QTest::newRow("gqa mismatch") << R"({"num_key_value_heads":3})" << bad << "multiple";
        QTest::newRow("indivisible") << R"({"hidden_size":250})" << bad << "divisible";
        QTest::newRow("odd head_dim") << R"({"head_dim":33})" << bad << "even";
        QTest::newRow("eps") << R"({"rms_norm_eps":"x"})" << bad << "rms_norm_eps";
        QTest::newRow("eos") << R"({"eos_token_id":"</s>"})" << bad << "eos_token_id";
        QTest::newRow("dtype") << R"({"torch_dtype":"int8"})" << unsup << "bfloat16";
        QTest::newRow("rope factor") << R"({"rope_scaling":{"rope_type":"linear"}})" << bad << "factor";
        QTest::newRow("tie") << R"({"tie_word_embeddings":"yes"})" << bad << "tie_word_embeddings";
    }
    void rejects() {
        QFETCH(QString, patch);
        QFETCH(int, code);
        QFETCH(QString, message);
        json j = base_llama();
        j.merge_patch(json::parse(patch.toStdString()));
        try {
            parse_model_config(j);
            QFAIL("accepted");
        } catch (const Error& e) {
            QCOMPARE(int(e.code()), code);
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }
    void not_an_object() { QVERIFY_THROWS_EXCEPTION(Error, parse_model_config(json::array())); }
    void round_trip_json() {
        for (const std::string& preset : synth_preset_names()) {
            ModelConfig c = synth_preset_config(preset, 500);
            c.eos_token_ids = {3, 4};
            ModelConfig d = parse_model_config(model_config_to_json(c));
            QCOMPARE(d.arch, c.arch);
            QCOMPARE(d.head_dim, c.head_dim);
            QCOMPARE(d.n_kv_heads, c.n_kv_heads);
            QCOMPARE(d.rope_theta, c.rope_theta);
            QCOMPARE(int(d.rope_scaling.type), int(c.rope_scaling.type));
            QCOMPARE(d.rope_scaling.factor, c.rope_scaling.factor);
            QCOMPARE(d.rms_norm_eps, c.rms_norm_eps);
            QCOMPARE(d.tie_word_embeddings, c.tie_word_embeddings);
            QCOMPARE(d.qkv_bias, c.qkv_bias);
            QCOMPARE(d.eos_token_ids, c.eos_token_ids);
            QCOMPARE(d.vocab_size % 64, 0);
        }
    }
    void unknown_preset() { QVERIFY_THROWS_EXCEPTION(Error, synth_preset_config("gpt-5", 100)); }
};

QTEST_GUILESS_MAIN(TstModelConfig)
#include "tst_model_config.moc"
