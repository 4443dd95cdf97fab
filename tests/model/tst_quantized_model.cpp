// engine/model: quantization_config parsing (accepted layouts, refusals naming what is supported), the
// loader's errors for quantized checkpoints (missing scales, wrong shapes and dtypes, bad g_idx), and
// synth-model --quant checkpoints that load with the right projections quantized.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <nlohmann/json.hpp>

#include "checkpoint_edit.h"
#include "core/error.h"
#include "model/dequantize.h"
#include "model/dequantized_layers.h"
#include "model/model_weights.h"
#include "model/safetensors.h"
#include "model/synth_model.h"

using namespace loradesk;
using namespace loradesk::model;
using json = nlohmann::json;

namespace {

json with_quant(const json& q) { return {{"quantization_config", q}}; }

std::string parse_error(const json& q) {
    try {
        parse_quant_config(with_quant(q));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

class TstQuantizedModel : public QObject {
    Q_OBJECT
  private slots:
    void parses_hub_configs_data() {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("description");
        QTest::newRow("qwen3 fp8") << R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                         "weight_block_size": [128, 128]})"
                                   << "fp8 e4m3, 128x128 blocks";
        QTest::newRow("compressed-tensors channel")
            << R"({"config_groups": {"group_0": {"input_activations": {"dynamic": true, "num_bits": 8,
                  "strategy": "token", "type": "float"}, "targets": ["Linear"], "weights": {"dynamic": false,
                  "num_bits": 8, "strategy": "channel", "symmetric": true, "type": "float"}}},
                  "format": "float-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors",
                  "quantization_status": "compressed"})"
            << "fp8 e4m3, per-channel scales (compressed-tensors)";
        QTest::newRow("compressed-tensors tensor static")
            << R"({"config_groups": {"group_0": {"input_activations": {"dynamic": false, "num_bits": 8,
                  "strategy": "tensor", "type": "float"}, "targets": ["Linear"], "weights": {"num_bits": 8,
                  "strategy": "tensor", "type": "float"}}}, "format": "float-quantized",
                  "ignore": ["lm_head"], "quant_method": "compressed-tensors"})"
            << "fp8 e4m3, per-tensor scale (compressed-tensors)";
        QTest::newRow("autoawq") << R"({"bits": 4, "group_size": 128, "modules_to_not_convert": null,
                                      "quant_method": "awq", "version": "gemm", "zero_point": true})"
                                 << "awq int4, group 128";
        QTest::newRow("autogptq") << R"({"bits": 4, "damp_percent": 0.01, "desc_act": false, "group_size": 128,
                                       "quant_method": "gptq", "static_groups": false, "sym": true,
                                       "true_sequential": true})"
                                  << "gptq int4, group 128";
        QTest::newRow("gptqmodel v2 act-order")
            << R"({"bits": 4, "checkpoint_format": "gptq_v2", "desc_act": true, "group_size": 32,
                  "quant_method": "gptq", "sym": false})"
            << "gptq int4, group 32, act-order, v2";
    }
    void parses_hub_configs() {
        QFETCH(QString, config);
        QFETCH(QString, description);
        const QuantConfig q = parse_quant_config(with_quant(json::parse(config.toStdString())));
        QCOMPARE(QString::fromStdString(quant_description(q)), description);
        // What we write reads back the same.
        const QuantConfig back = parse_quant_config(with_quant(quant_config_to_json(q)));
        QCOMPARE(QString::fromStdString(quant_description(back)), description);
    }

    void no_quantization_config() {
        QVERIFY(!parse_quant_config(json{{"hidden_size", 8}}).quantized());
        QVERIFY(!parse_model_config(model_config_to_json(synth_preset_config("tiny", 100))).quant.quantized());
    }

    void refuses_data() {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("message");
        QTest::newRow("bitsandbytes") << R"({"quant_method": "bitsandbytes", "load_in_4bit": true})"
                                      << "quant_method \"bitsandbytes\" is not supported; supported: fp8";
        QTest::newRow("fp8 per-tensor autofp8") << R"({"quant_method": "fp8", "activation_scheme": "static"})"
                                                << "without weight_block_size";
        QTest::newRow("fp8 bad block") << R"({"quant_method": "fp8", "weight_block_size": [128]})"
                                       << "weight_block_size must be two positive integers";
        QTest::newRow("fp8 e5m2") << R"({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]})"
                                  << "fmt \"e5m2\"";
        QTest::newRow("awq 8 bit") << R"({"quant_method": "awq", "bits": 8, "version": "gemm"})"
                                   << "awq with 8 bits";
        QTest::newRow("awq gemv") << R"({"quant_method": "awq", "bits": 4, "version": "gemv"})"
                                  << "awq version \"gemv\"";
        QTest::newRow("gptq 3 bit") << R"({"quant_method": "gptq", "bits": 3})"
                                    << "gptq with 3 bits";
        QTest::newRow("gptq marlin") << R"({"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"})"
                                     << "checkpoint_format \"marlin\"";
        QTest::newRow("gptq lm_head") << R"({"quant_method": "gptq", "bits": 4, "lm_head": true})"
                                      << "quantized lm_head";
        QTest::newRow("compressed int4") << R"({"quant_method": "compressed-tensors", "format": "pack-quantized"})"
                                         << "format \"pack-quantized\"";
        QTest::newRow("compressed int8 weights")
            << R"({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
                  "weights": {"type": "int", "num_bits": 8, "strategy": "channel"}}}})"
            << "type \"int\" num_bits 8";
        QTest::newRow("compressed group strategy")
            << R"({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
                  "weights": {"type": "float", "num_bits": 8, "strategy": "group"}}}})"
            << "strategy \"group\"";
        QTest::newRow("no method") << R"({"bits": 4})"
                                   << "missing \"quant_method\"";
        QTest::newRow("not an object") << R"("awq")"
                                       << "must be an object";
    }
    void refuses() {
        QFETCH(QString, config);
        QFETCH(QString, message);
        const std::string e = parse_error(json::parse(config.toStdString()));
        QVERIFY2(e.find(message.toStdString()) != std::string::npos, e.c_str());
    }

    void not_converted_modules() {
        QuantConfig awq;
        awq.format = QuantFormat::awq;
        awq.not_converted = {"mlp.down_proj"};
        QVERIFY(!awq.quantizes("model.layers.3.mlp.down_proj"));
        QVERIFY(awq.quantizes("model.layers.3.mlp.up_proj"));
        QuantConfig ct;
        ct.format = QuantFormat::fp8_channel;
        ct.not_converted = {"lm_head", "re:.*layers\\.0\\..*"};
        QVERIFY(!ct.quantizes("model.layers.0.self_attn.q_proj"));
        QVERIFY(ct.quantizes("model.layers.10.self_attn.q_proj"));
    }

    void synth_models_load_data() {
        QTest::addColumn<QString>("quant");
        QTest::addColumn<QString>("preset");
        for (const std::string& q : synth_quant_names())
            for (const char* p : {"tiny", "tiny-llama"})
                QTest::newRow(qPrintable(QString("%1 %2").arg(q.c_str(), p))) << QString::fromStdString(q) << p;
    }
    void synth_models_load() {
        QFETCH(QString, quant);
        QFETCH(QString, preset);
        QTemporaryDir plain_dir, quant_dir;
        SynthOptions o;
        o.preset = preset.toStdString();
        o.out_dir = plain_dir.path().toStdString();
        synth_model(o);
        o.out_dir = quant_dir.path().toStdString();
        o.quant = quant.toStdString();
        const ModelConfig c = synth_model(o);
        QVERIFY(c.quant.quantized());
        ModelWeights plain(plain_dir.path().toStdString()), w(o.out_dir);
        QCOMPARE(w.config().quant.format, c.quant.format);
        QVERIFY(w.quantized());
        QCOMPARE(w.parameter_count(), plain.parameter_count());
        const LayerWeights& l = w.layer(1);
        QVERIFY(l.q == nullptr && l.down == nullptr);
        QVERIFY(l.quant.q && l.quant.k && l.quant.v && l.quant.o && l.quant.gate && l.quant.up && l.quant.down);
        QCOMPARE(l.quant.down->in_features, int64_t(c.intermediate_size));
        QVERIFY(w.quantized_bytes() > 0 && w.quantized_bytes() < w.bytes());
        QVERIFY(w.bytes() < plain.bytes());  // the embeddings stay bf16, the projections shrink
        // The dequantized f32 layers stand in for the bf16 ones: same shapes, values within the format's error.
        DequantizedLayers d(w);
        const TensorView& dq = *d.layer(1).q;
        const std::vector<float> got = dq.to_f32(), want = plain.layer(1).q->to_f32();
        QCOMPARE(dq.shape, plain.layer(1).q->shape);
        double err = 0, mag = 0;
        for (std::size_t k = 0; k < got.size(); ++k) {
            err = std::max(err, double(std::fabs(got[k] - want[k])));
            mag = std::max(mag, double(std::fabs(want[k])));
        }
        QVERIFY2(err < 0.15 * mag, qPrintable(QString("max error %1 of max %2").arg(err).arg(mag)));
    }

    // Shards split a projection's packed tensors across files; the writer must hand each part out once.
    void sharded_checkpoint_matches_single_file_data() {
        QTest::addColumn<QString>("quant");
        QTest::newRow("gptq-actorder") << "gptq-actorder";
        QTest::newRow("fp8") << "fp8";
    }
    void sharded_checkpoint_matches_single_file() {
        QFETCH(QString, quant);
        QTemporaryDir one_dir, sharded_dir;
        SynthOptions o;
        o.quant = quant.toStdString();
        o.out_dir = one_dir.path().toStdString();
        synth_model(o);
        o.out_dir = sharded_dir.path().toStdString();
        o.max_shard_bytes = 64 << 10;
        synth_model(o);
        QVERIFY(QFile::exists(sharded_dir.filePath("model.safetensors.index.json")));
        ModelWeights one(one_dir.path().toStdString()), sharded(o.out_dir);
        QCOMPARE(sharded.bytes(), one.bytes());
        for (int l = 0; l < one.n_layers(); ++l) {
            const LayerQuant &a = one.layer(l).quant, &b = sharded.layer(l).quant;
            for (const auto& [x, y] : {std::pair{a.q, b.q},
                                       {a.k, b.k},
                                       {a.v, b.v},
                                       {a.o, b.o},
                                       {a.gate, b.gate},
                                       {a.up, b.up},
                                       {a.down, b.down}})
                QVERIFY(dequantize(*x) == dequantize(*y));
        }
    }

    void loader_errors_data() {
        QTest::addColumn<QString>("quant");
        QTest::addColumn<QString>("tensor");
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("message");
        QTest::newRow("fp8 missing scales")
            << "fp8"
            << "model.layers.0.self_attn.q_proj.weight_scale_inv"
            << "drop"
            << "has no tensor 'model.layers.0.self_attn.q_proj.weight_scale_inv' [2, 1]";
        QTest::newRow("fp8 scales misshapen") << "fp8"
                                              << "model.layers.0.mlp.up_proj.weight_scale_inv"
                                              << "reshape"
                                              << "needs [3, 1]";
        QTest::newRow("fp8 weight as bf16") << "fp8-channel"
                                            << "model.layers.1.mlp.down_proj.weight"
                                            << "dtype"
                                            << "stores it as F8_E4M3";
        QTest::newRow("awq missing qzeros") << "awq"
                                            << "model.layers.0.mlp.gate_proj.qzeros"
                                            << "drop"
                                            << "has no tensor 'model.layers.0.mlp.gate_proj.qzeros'";
        QTest::newRow("awq qweight misshapen") << "awq"
                                               << "model.layers.0.mlp.gate_proj.qweight"
                                               << "reshape"
                                               << "needs [128, 48]";
        QTest::newRow("gptq missing g_idx") << "gptq"
                                            << "model.layers.2.self_attn.o_proj.g_idx"
                                            << "drop"
                                            << "has no tensor 'model.layers.2.self_attn.o_proj.g_idx' [192]";
        QTest::newRow("gptq g_idx out of range") << "gptq-actorder"
                                                 << "model.layers.0.self_attn.k_proj.g_idx"
                                                 << "g_idx"
                                                 << "g_idx[0] = 9 is outside the 1 groups";
        QTest::newRow("gptq scales as int") << "gptq"
                                            << "model.layers.0.self_attn.v_proj.scales"
                                            << "dtype"
                                            << "stores it as F32, F16 or BF16";
    }
    void loader_errors() {
        QFETCH(QString, quant);
        QFETCH(QString, tensor);
        QFETCH(QString, edit);
        QFETCH(QString, message);
        QTemporaryDir tmp;
        SynthOptions o;
        o.out_dir = tmp.path().toStdString();
        o.quant = quant.toStdString();
        synth_model(o);
        testing::rewrite_checkpoint(
            o.out_dir, [&](std::string& name, DType& dtype, std::vector<int64_t>& shape, std::vector<uint8_t>& b) {
                if (name != tensor.toStdString()) return true;
                if (edit == "drop") return false;
                if (edit == "reshape") {
                    int64_t n = 1;
                    for (int64_t d : shape) n *= d;
                    shape = {n};
                } else if (edit == "dtype") {
                    dtype = dtype == DType::f8_e4m3 ? DType::u8 : DType::i16;
                    if (dtype == DType::i16) shape.back() *= int64_t(b.size() / 2) / (shape[0] * shape.back());
                } else if (edit == "g_idx") {
                    b[0] = 9;
                }
                return true;
            });
        const std::string e = testing::weights_error(o.out_dir);
        QVERIFY2(e.find(message.toStdString()) != std::string::npos, e.c_str());
    }
};

QTEST_GUILESS_MAIN(TstQuantizedModel)
#include "tst_quantized_model.moc"
