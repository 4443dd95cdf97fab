// Agreement of prompt scoring with the CPU runner on the demo kit (resources/demo): the loglikelihood that
// lm-eval reads from /v1/completions with echo + logprobs (max_tokens 0), for the base model and each
// fortune adapter, equals the log-softmax (in double) of the runner's own logits for the same token ids and
// adapter, to 1e-4 -- whether the prompt runs in one prefill chunk or several, and with a warm prefix cache.
// The fortunes are written for this test, so none is in the adapters' training text.
#include <QtTest>
#include <cmath>

#include "api/engine.h"
#include "lora/adapter_loader.h"
#include "runtime/cpu/cpu_runner.h"
#include "runtime/reference_logprobs.h"
#include "server/router.h"
#include "server/server_test_util.h"

using namespace loradesk;
using nlohmann::json;

namespace {

const std::string kModel = LORADESK_SOURCE_DIR "/resources/demo/fortune-6m";
const std::string kAdapters = LORADESK_SOURCE_DIR "/resources/demo/adapters";

const std::vector<std::string> kFortunes = {
    "A closed mouth gathers no foot, but an open window gathers all the flies of the afternoon.",
    "Wer morgens zu spät kommt, dem gehört der Kaffee nicht mehr.",
    "El que madruga encuentra la oficina cerrada y la cafetera vacía.",
    "Chi va piano arriva tardi, ma almeno arriva con il caffè.",
    "The server is down because the backup of the backup was restored over the backup.",
};

// Row i of the result: log-softmax of the runner's logits at prompt position i, in double.
std::vector<std::vector<double>> reference(runtime::cpu::CpuRunner& runner, int slot, const std::vector<int32_t>& ids) {
    return test::full_prompt_logprobs(runner, slot, ids);
}

}  // namespace

class TstPromptAgreement : public QObject {
    Q_OBJECT
    const std::vector<std::string> m_models = {"fortune-6m", "de", "es", "it", "bofh"};
    // model -> fortune -> the reference loglikelihood of every token after the first
    std::map<std::string, std::vector<std::vector<double>>> m_expected;
    std::vector<std::vector<int32_t>> m_ids;

    static api::EngineOptions options(int max_batch_tokens) {
        api::EngineOptions o;
        o.model_dir = kModel;
        o.adapter_dirs = {kAdapters};
        o.device = "cpu";
        o.cpu_threads = 1;
        o.kv_memory_gb = 0.05;
        o.adapter_watch_interval_ms = 0;
        o.max_batch_tokens = max_batch_tokens;
        return o;
    }

  private slots:
    void initTestCase() {
        if (!QFileInfo::exists(QString::fromStdString(kModel + "/model.safetensors")))
            QSKIP("the demo kit (resources/demo) is not available");
        auto engine = api::create_engine(options(2048));
        QVERIFY2(engine.ok(), engine.ok() ? "" : engine.status().message.c_str());
        for (const std::string& f : kFortunes) m_ids.push_back(engine.value()->tokenize(f, true).value());
        engine.value()->shutdown();

        runtime::cpu::CpuRunner runner(kModel, 1);
        runner.allocate_kv(16, 16);
        runner.configure_lora_slots(1, 64);
        for (const std::string& model : m_models) {
            int slot = 0;
            if (model != "fortune-6m") {
                runner.load_lora_slot(1, lora::load_adapter(kAdapters + "/" + model, runner.config(), 64));
                slot = 1;
            }
            for (const auto& ids : m_ids) {
                const auto lp = reference(runner, slot, ids);
                std::vector<double> want;
                for (std::size_t i = 1; i < ids.size(); ++i) want.push_back(lp[i - 1][std::size_t(ids[i])]);
                m_expected[model].push_back(std::move(want));
            }
        }
        // The adapters change the scores (else this test could not tell whether they were applied).
        for (const std::string& model : m_models) {
            if (model == "fortune-6m") continue;
            double diff = 0;
            for (std::size_t f = 0; f < m_ids.size(); ++f)
                for (std::size_t i = 0; i < m_expected[model][f].size(); ++i)
                    diff += std::abs(m_expected[model][f][i] - m_expected["fortune-6m"][f][i]);
            QVERIFY2(diff > 1.0, model.c_str());
        }
    }

    void http_echo_logprobs_agree_with_the_runner_data() {
        QTest::addColumn<int>("max_batch_tokens");
        QTest::addColumn<bool>("warm");
        QTest::newRow("one prefill chunk") << 2048 << false;
        QTest::newRow("chunks of 5 tokens") << 5 << false;
        QTest::newRow("prefix cache warm") << 2048 << true;
    }
    void http_echo_logprobs_agree_with_the_runner() {
        QFETCH(int, max_batch_tokens);
        QFETCH(bool, warm);
        auto made = api::create_engine(options(max_batch_tokens));
        QVERIFY2(made.ok(), made.ok() ? "" : made.status().message.c_str());
        api::Engine& engine = *made.value();
        server::Router router(engine, server::ServerOptions{});
        for (const std::string& model : m_models) {
            if (warm) {  // the same prompts generated first: their KV is in the prefix cache
                const server::HttpResponse r = router.handle(testing::post_json(
                    "/v1/completions",
                    {{"model", model}, {"prompt", kFortunes}, {"max_tokens", 2}, {"temperature", 0}}));
                QCOMPARE(r.status, 200);
            }
            // lm-eval local-completions' loglikelihood request (prompts as strings, batched).
            const server::HttpResponse r = router.handle(testing::post_json("/v1/completions", {{"model", model},
                                                                                                {"prompt", kFortunes},
                                                                                                {"echo", true},
                                                                                                {"logprobs", 1},
                                                                                                {"max_tokens", 0},
                                                                                                {"temperature", 0}}));
            QVERIFY2(r.status == 200, r.body.c_str());
            const json b = json::parse(r.body);
            QCOMPARE(b["choices"].size(), kFortunes.size());
            for (std::size_t f = 0; f < kFortunes.size(); ++f) {
                const json& c = b["choices"][f];
                QCOMPARE(c["index"].get<std::size_t>(), f);
                QCOMPARE(c["text"].get<std::string>(), kFortunes[f]);
                QCOMPARE(c["finish_reason"].get<std::string>(), std::string("length"));
                const json& lp = c["logprobs"];
                const std::vector<double>& want = m_expected[model][f];
                QCOMPARE(lp["token_logprobs"].size(), want.size() + 1);
                QVERIFY(lp["token_logprobs"][0].is_null());
                QVERIFY(lp["top_logprobs"][0].is_null());
                for (std::size_t i = 0; i < want.size(); ++i) {
                    const double got = lp["token_logprobs"][i + 1].get<double>();
                    QVERIFY2(std::abs(got - want[i]) < 1e-4, qPrintable(QString("%1, fortune %2, token %3: %4 vs %5")
                                                                            .arg(QString::fromStdString(model))
                                                                            .arg(f)
                                                                            .arg(i + 1)
                                                                            .arg(got)
                                                                            .arg(want[i])));
                    QVERIFY(lp["top_logprobs"][i + 1].size() >= 1);
                }
            }
            QCOMPARE(b["usage"]["completion_tokens"].get<int>(), 0);
            if (warm) QCOMPARE(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
        }
        engine.shutdown();
    }
};

QTEST_GUILESS_MAIN(TstPromptAgreement)
#include "tst_prompt_agreement.moc"
