// engine/lora adapter_config: PEFT's matching rules (targets, excludes, layers, rank/alpha patterns),
// scales, and the fail-closed rejections of features we cannot apply exactly.
#include <QtTest>

#include <cmath>

#include "core/error.h"
#include "lora/adapter_config.h"

using namespace loradesk;
using namespace loradesk::lora;

namespace {

AdapterConfig parse(const std::string& body) { return parse_adapter_config(body, "adapter_config.json"); }

}  // namespace

class TstAdapterConfig : public QObject {
    Q_OBJECT
  private slots:
    void targets_data() {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("module");
        QTest::addColumn<bool>("targeted");
        const QString q = "model.layers.3.self_attn.q_proj";
        const QString v = "model.layers.12.self_attn.v_proj";
        QTest::newRow("list suffix") << "{\"target_modules\":[\"q_proj\",\"v_proj\"]}" << q << true;
        QTest::newRow("list miss") << "{\"target_modules\":[\"k_proj\"]}" << q << false;
        QTest::newRow("list needs dot boundary") << "{\"target_modules\":[\"_proj\"]}" << q << false;
        QTest::newRow("list full name") << "{\"target_modules\":[\"model.layers.3.self_attn.q_proj\"]}" << q << true;
        QTest::newRow("regex fullmatch") << "{\"target_modules\":\".*\\\\.(q|v)_proj\"}" << v << true;
        QTest::newRow("regex partial is no match") << "{\"target_modules\":\"q_proj\"}" << q << false;
        QTest::newRow("regex layer-limited")
            << "{\"target_modules\":\"model\\\\.layers\\\\.[0-3]\\\\..*_proj\"}" << v << false;
        QTest::newRow("all-linear") << "{\"target_modules\":\"all-linear\"}"
                                    << "model.layers.0.mlp.down_proj" << true;
        QTest::newRow("exclude wins") << "{\"target_modules\":[\"q_proj\"],\"exclude_modules\":[\"q_proj\"]}" << q
                                      << false;
        QTest::newRow("exclude regex") << "{\"target_modules\":\"all-linear\",\"exclude_modules\":\".*\\\\.3\\\\..*\"}"
                                       << q << false;
        QTest::newRow("layers in") << "{\"target_modules\":[\"q_proj\"],\"layers_to_transform\":[1,3]}" << q << true;
        QTest::newRow("layers out") << "{\"target_modules\":[\"v_proj\"],\"layers_to_transform\":[1,3]}" << v << false;
        QTest::newRow("layers int") << "{\"target_modules\":[\"q_proj\"],\"layers_to_transform\":3}" << q << true;
        QTest::newRow("layers pattern")
            << "{\"target_modules\":[\"q_proj\"],\"layers_to_transform\":[3],\"layers_pattern\":\"layers\"}" << q
            << true;
        QTest::newRow("layers pattern miss")
            << "{\"target_modules\":[\"q_proj\"],\"layers_to_transform\":[3],\"layers_pattern\":[\"h\",\"blocks\"]}"
            << q << false;
        QTest::newRow("layers ignored for exact names")
            << "{\"target_modules\":[\"model.layers.3.self_attn.q_proj\"],\"layers_to_transform\":[0]}" << q << true;
        // A tensor name (from a file) with a layer index beyond int: std::stoi threw out_of_range (found by
        // fuzz_adapter_config).
        QTest::newRow("layer index beyond int") << "{\"target_modules\":[\"q_proj\"],\"layers_to_transform\":[3]}"
                                                << "model.layers.99999999999999999999.self_attn.q_proj" << false;
        QTest::newRow("unset targets: tensors decide") << "{}" << q << true;
    }
    // PCRE2 stops a catastrophically backtracking match at its limit; that error was read as "no match", which
    // left modules out of the adapter without a word.
    void regex_backtracking_limit_is_an_error() {
        AdapterConfig c = parse(R"({"target_modules":"(?:a|aa)*"})");
        QVERIFY(c.targets(std::string(40, 'a')));
        try {
            c.targets(std::string(60, 'a') + "b");
            QFAIL("expected an error");
        } catch (const ExpectedError& e) {
            QVERIFY2(QString(e.what()).contains("simplify the pattern"), e.what());
        }
    }
    void targets() {
        QFETCH(QString, config);
        QFETCH(QString, module);
        QFETCH(bool, targeted);
        QCOMPARE(parse(config.toStdString()).targets(module.toStdString()), targeted);
    }

    void scales_data() {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("module");
        QTest::addColumn<int>("rank");
        QTest::addColumn<double>("scale");
        QTest::newRow("defaults r8 a8") << "{}"
                                        << "model.layers.0.mlp.up_proj" << 8 << 1.0;
        QTest::newRow("alpha/r") << "{\"r\":16,\"lora_alpha\":32}"
                                 << "model.layers.0.mlp.up_proj" << 16 << 2.0;
        QTest::newRow("rslora") << "{\"r\":16,\"lora_alpha\":32,\"use_rslora\":true}"
                                << "model.layers.0.mlp.up_proj" << 16 << 8.0;
        QTest::newRow("rank pattern short key") << "{\"r\":8,\"lora_alpha\":16,\"rank_pattern\":{\"v_proj\":4}}"
                                                << "model.layers.2.self_attn.v_proj" << 4 << 4.0;
        QTest::newRow("rank pattern needs component boundary")
            << "{\"r\":8,\"lora_alpha\":16,\"rank_pattern\":{\"_proj\":4}}"
            << "model.layers.2.self_attn.v_proj" << 8 << 2.0;
        QTest::newRow("rank pattern regex key")
            << "{\"r\":8,\"lora_alpha\":16,\"rank_pattern\":{\"layers\\\\.2\\\\..*v_proj\":2}}"
            << "model.layers.2.self_attn.v_proj" << 2 << 8.0;
        QTest::newRow("first matching key wins in file order")
            << "{\"r\":8,\"lora_alpha\":16,\"rank_pattern\":{\"v_proj\":4,\"layers.2.self_attn.v_proj\":2}}"
            << "model.layers.2.self_attn.v_proj" << 4 << 4.0;
        QTest::newRow("exact key beats earlier regex")
            << "{\"r\":8,\"lora_alpha\":16,\"rank_pattern\":{\"v_proj\":4,\"model.layers.2.self_attn.v_proj\":2}}"
            << "model.layers.2.self_attn.v_proj" << 2 << 8.0;
        QTest::newRow("alpha pattern") << "{\"r\":8,\"lora_alpha\":16,\"alpha_pattern\":{\"down_proj\":64}}"
                                       << "model.layers.1.mlp.down_proj" << 8 << 8.0;
        QTest::newRow("both patterns rslora") << "{\"r\":8,\"lora_alpha\":16,\"use_rslora\":true,\"rank_pattern\":{\"o_"
                                                 "proj\":4},\"alpha_pattern\":{\"o_proj\":6}}"
                                              << "model.layers.1.self_attn.o_proj" << 4 << 3.0;
    }
    void scales() {
        QFETCH(QString, config);
        QFETCH(QString, module);
        QFETCH(int, rank);
        QFETCH(double, scale);
        AdapterConfig c = parse(config.toStdString());
        QCOMPARE(c.rank_for(module.toStdString()), rank);
        QVERIFY(std::abs(c.scale_for(module.toStdString()) - scale) < 1e-6);
    }

    void fields() {
        AdapterConfig c = parse(
            "{\"peft_type\":\"LORA\",\"task_type\":\"CAUSAL_LM\",\"base_model_name_or_path\":\"Qwen/Qwen3-8B\","
            "\"r\":4,\"lora_alpha\":8.5,\"fan_in_fan_out\":true,\"lora_dropout\":0.05,\"inference_mode\":true,\"bias\":"
            "\"none\","
            "\"use_dora\":false,\"modules_to_save\":null,\"layer_replication\":null,\"target_parameters\":[],\"loftq_"
            "config\":{}}");
        QCOMPARE(c.base_model, std::string("Qwen/Qwen3-8B"));
        QCOMPARE(c.r, 4);
        QCOMPARE(c.lora_alpha, 8.5);
        QVERIFY(c.fan_in_fan_out);
        QCOMPARE(c.target_modules.kind, ModuleMatcher::Kind::unset);
    }

    void rejected_data() {
        QTest::addColumn<QString>("config");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        const int unsupported = int(ErrorCode::unsupported), corrupt = int(ErrorCode::corrupt_file),
                  invalid = int(ErrorCode::invalid_argument);
        QTest::newRow("not json") << "{r: 8" << corrupt << "not valid JSON";
        QTest::newRow("not object") << "[1,2]" << corrupt << "must contain a JSON object";
        QTest::newRow("adalora") << "{\"peft_type\":\"ADALORA\"}" << unsupported << "peft_type is 'ADALORA'";
        QTest::newRow("ia3") << "{\"peft_type\":\"IA3\"}" << unsupported << "only LoRA adapters";
        QTest::newRow("seq cls") << "{\"task_type\":\"SEQ_CLS\"}" << unsupported << "only CAUSAL_LM";
        QTest::newRow("dora") << "{\"use_dora\":true}" << unsupported << "DoRA adapters are not supported";
        QTest::newRow("modules_to_save") << "{\"modules_to_save\":[\"lm_head\"]}" << unsupported
                                         << "modules_to_save is set";
        QTest::newRow("bias all") << "{\"bias\":\"all\"}" << unsupported << "bias is 'all'";
        QTest::newRow("bias lora_only") << "{\"bias\":\"lora_only\"}" << unsupported << "bias is 'lora_only'";
        QTest::newRow("lora_bias") << "{\"lora_bias\":true}" << unsupported << "lora_bias is true";
        QTest::newRow("layer_replication")
            << "{\"layer_replication\":[[0,4],[2,6]]}" << unsupported << "layer_replication is set";
        QTest::newRow("alora") << "{\"alora_invocation_tokens\":[1,2]}" << unsupported
                               << "alora_invocation_tokens is set";
        QTest::newRow("trainable tokens")
            << "{\"trainable_token_indices\":[5]}" << unsupported << "trainable_token_indices is set";
        QTest::newRow("target_parameters")
            << "{\"target_parameters\":[\"experts.gate_up_proj\"]}" << unsupported << "target_parameters is set";
        QTest::newRow("lm_head target") << "{\"target_modules\":[\"q_proj\",\"lm_head\"]}" << unsupported
                                        << "includes lm_head";
        QTest::newRow("embedding target")
            << "{\"target_modules\":[\"embed_tokens\"]}" << unsupported << "includes model.embed_tokens";
        QTest::newRow("regex hits lm_head")
            << "{\"target_modules\":\".*q_proj|.*lm_head\"}" << unsupported << "includes lm_head";
        QTest::newRow("r zero") << "{\"r\":0}" << corrupt << "'r' must be a positive integer";
        QTest::newRow("r string") << "{\"r\":\"8\"}" << corrupt << "'r' must be an integer";
        QTest::newRow("r past 32 bits") << "{\"r\":4294967312}" << corrupt << "'r' must be an integer within 32 bits";
        QTest::newRow("r past 64 bits") << "{\"r\":18446744073709551615}" << corrupt << "within 32 bits";
        QTest::newRow("rank pattern past 32 bits")
            << "{\"rank_pattern\":{\"q_proj\":4294967304}}" << corrupt << "rank_pattern.q_proj";
        QTest::newRow("layer past 32 bits")
            << "{\"layers_to_transform\":[1,4294967297]}" << corrupt << "layers_to_transform";
        // Finite as doubles but not as the float scale alpha/r: the fuzzer found that 1e300 reached the forward.
        QTest::newRow("alpha past float") << "{\"lora_alpha\":1e39}" << corrupt << "'lora_alpha' must be a finite";
        QTest::newRow("alpha pattern past float")
            << "{\"alpha_pattern\":{\"q_proj\":-1e300}}" << corrupt << "'alpha_pattern.q_proj' must be a finite";
        QTest::newRow("bad rank pattern") << "{\"rank_pattern\":{\"q_proj\":-1}}" << corrupt << "rank_pattern.q_proj";
        QTest::newRow("bad regex") << "{\"target_modules\":\"(q_proj\"}" << invalid << "does not compile";
        QTest::newRow("bad targets type") << "{\"target_modules\":5}" << corrupt << "target_modules";
    }
    void rejected() {
        QFETCH(QString, config);
        QFETCH(int, code);
        QFETCH(QString, message);
        try {
            parse(config.toStdString());
            QFAIL("expected an error");
        } catch (const ExpectedError& e) {
            QCOMPARE(int(e.code()), code);
            QVERIFY2(QString(e.what()).contains(message), e.what());
            QVERIFY2(QString(e.what()).startsWith("adapter_config.json"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TstAdapterConfig)
#include "tst_adapter_config.moc"
