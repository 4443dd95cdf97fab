// engine/api serving on the CPU runner: a base model without a chat template starts and serves
// completions while chat answers a clear error naming --chat-template (and --chat-template supplies one);
// the engine-wide statistics (/metrics' source) count steps, batches, phases and where rows were sampled;
// what the server reads to choose reply parsers (the template's text, the rendered prompt's tail); the token
// that ends a reply is not written out when special tokens are kept.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/engine.h"
#include "engine_test_util.h"
#include "model/synth_model.h"

using namespace loradesk;
namespace fs = std::filesystem;

namespace {

// A request read to its end: its completion tokens, or the failure.
Result<int> finish(Result<std::shared_ptr<api::RequestStream>> submitted) {
    Result<api::FinishEvent> fin = test::read_to_end(std::move(submitted));
    if (!fin.ok()) return fin.status();
    return fin.value().usage.completion_tokens;
}

api::GenerateRequest chat(float temperature) {
    api::GenerateRequest r;
    r.messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"hello"}])");
    r.sampling.temperature = temperature;
    r.stop.max_tokens = 4;
    r.stop.ignore_eos = true;
    return r;
}

}  // namespace

class TstEngineServing : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_model;  // a "-Base" style checkpoint: tokenizer_config.json without chat_template

    std::unique_ptr<api::Engine> make_engine(const std::string& chat_template_file = {}) {
        api::EngineOptions o;
        o.model_dir = m_model;
        o.device = "cpu";
        o.cpu_threads = 1;
        o.chat_template_file = chat_template_file;
        auto made = api::create_engine(o);
        if (!made.ok()) qFatal("create_engine: %s", made.status().message.c_str());
        return std::move(made).value();
    }

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        model::SynthOptions so;
        so.preset = "tiny";
        so.out_dir = (fs::path(m_tmp.path().toStdString()) / "tiny-Base").string();
        model::synth_model(so);
        m_model = so.out_dir;
        const fs::path cfg = fs::path(m_model) / "tokenizer_config.json";
        nlohmann::json j = nlohmann::json::parse(std::ifstream(cfg));
        j.erase("chat_template");
        std::ofstream(cfg) << j.dump();
        fs::remove(fs::path(m_model) / "chat_template.jinja");
    }

    void model_without_template_serves_completions_only() {
        auto engine = make_engine();
        api::GenerateRequest r;
        r.prompt = "hello there";
        r.sampling.temperature = 0;
        r.stop.max_tokens = 5;
        r.stop.ignore_eos = true;
        Result<int> done = finish(engine->submit(r));
        QVERIFY2(done.ok(), done.status().message.c_str());
        QCOMPARE(done.value(), 5);

        Result<int> refused = finish(engine->submit(chat(0)));
        QVERIFY(!refused.ok());
        QCOMPARE(refused.status().code, ErrorCode::invalid_argument);
        QVERIFY2(refused.status().message.find("--chat-template") != std::string::npos,
                 refused.status().message.c_str());
        engine->shutdown();
    }

    // An explicit max_tokens beyond the context is refused with OpenAI's message; the default is clipped.
    void explicit_max_tokens_must_fit_the_context() {
        auto engine = make_engine();
        const int ctx = engine->model().max_context;
        api::GenerateRequest r;
        r.prompt_ids = {5, 6, 7};
        r.sampling.temperature = 0;
        r.stop.max_tokens = ctx;  // 3 + ctx > ctx
        r.stop.strict_max_tokens = true;
        auto refused = engine->submit(r);
        QVERIFY(!refused.ok());
        QCOMPARE(refused.status().code, ErrorCode::context_too_long);
        const std::string want = "This model's maximum context length is " + std::to_string(ctx) +
                                 " tokens. However, you requested " + std::to_string(ctx + 3) +
                                 " tokens (3 in the prompt, " + std::to_string(ctx) +
                                 " in the completion). Please reduce the length of the prompt or completion.";
        QCOMPARE(QString::fromStdString(refused.status().message), QString::fromStdString(want));
        r.stop.max_tokens = ctx - 3;  // exactly fits
        auto fits = engine->submit(r);
        QVERIFY(fits.ok());
        fits.value()->cancel();
        r.stop.max_tokens = ctx;
        r.stop.strict_max_tokens = false;  // not asked for: clipped
        auto clipped = engine->submit(r);
        QVERIFY(clipped.ok());
        QCOMPARE(clipped.value()->info().max_tokens, ctx - 3);
        clipped.value()->cancel();
        engine->shutdown();
    }

    void chat_template_file_supplies_one() {
        const fs::path file = fs::path(m_tmp.path().toStdString()) / "template.jinja";
        const std::string text =
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}";
        std::ofstream(file) << text;
        auto engine = make_engine(file.string());
        // The server reads the template's markers and the rendered prompt's tail to choose its reply parsers.
        QCOMPARE(engine->model().chat_template, text);
        auto submitted = engine->submit(chat(0));
        QVERIFY(submitted.ok());
        QCOMPARE(submitted.value()->info().prompt_tail, std::string("<|user|>hello\n<|assistant|>"));
        Result<int> done = finish(std::move(submitted));
        QVERIFY2(done.ok(), done.status().message.c_str());
        QCOMPARE(done.value(), 4);
        engine->shutdown();
    }

    // With skip_special_tokens=false (tool requests whose markers are special tokens) the token that ends the
    // reply is not written out, as in vLLM; with the default its text was never there for special tokens.
    void the_ending_token_is_silent_when_specials_are_kept() {
        auto engine = make_engine();
        const auto run = [&](std::vector<int32_t> stop_ids, bool skip_special) {
            api::GenerateRequest r;
            r.prompt = "hello there";
            r.sampling.temperature = 0;
            r.stop.max_tokens = 3;
            r.stop.ignore_eos = true;
            r.stop.stop_token_ids = std::move(stop_ids);
            r.skip_special_tokens = skip_special;
            std::string text;
            std::vector<int32_t> ids;
            auto s = engine->submit(r);
            if (!s.ok()) return std::make_pair(text, ids);
            for (int i = 0; i < 600; ++i) {
                auto ev = s.value()->next(std::chrono::milliseconds(100));
                if (!ev) continue;
                if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
                    text += t->text;
                    ids.insert(ids.end(), t->token_ids.begin(), t->token_ids.end());
                    continue;
                }
                break;
            }
            return std::make_pair(text, ids);
        };
        const auto [free_text, free_ids] = run({}, false);
        QCOMPARE(free_ids.size(), std::size_t(3));
        const auto [first_text, first_ids] = run({free_ids[0]}, true);  // stops at its first token, text kept
        QCOMPARE(first_ids.size(), std::size_t(1));
        QVERIFY(!first_text.empty());
        const auto [silent_text, silent_ids] = run({free_ids[0]}, false);
        QCOMPARE(silent_ids.size(), std::size_t(1));
        QCOMPARE(silent_text, std::string());
        engine->shutdown();
    }

    void missing_template_file_is_a_clear_startup_error() {
        api::EngineOptions o;
        o.model_dir = m_model;
        o.device = "cpu";
        o.chat_template_file = (fs::path(m_tmp.path().toStdString()) / "nope.jinja").string();
        auto made = api::create_engine(o);
        QVERIFY(!made.ok());
        QCOMPARE(made.status().code, ErrorCode::not_found);
        QVERIFY(made.status().message.find("--chat-template") != std::string::npos);
    }

    // Greedy rows take the runner's argmax; sampled rows come back whole to the host sampler. Both are
    // counted, with the steps, batch sizes and phase times behind them.
    void stats_count_steps_batches_and_sampling() {
        auto engine = make_engine();
        api::GenerateRequest greedy;
        greedy.prompt_ids = {1, 2, 3, 4, 5};
        greedy.sampling.temperature = 0;
        greedy.stop.max_tokens = 6;
        greedy.stop.ignore_eos = true;
        api::GenerateRequest sampled = greedy;
        sampled.sampling.temperature = 0.8f;
        sampled.sampling.top_p = 0.9f;
        sampled.sampling.seed = 7;
        auto a = engine->submit(greedy);
        auto b = engine->submit(sampled);
        QVERIFY(finish(std::move(a)).ok());
        QVERIFY(finish(std::move(b)).ok());
        const api::EngineStats s = engine->stats();
        QCOMPARE(engine->model().max_loras, 4);  // the CPU runner's default: no device memory to plan
        QVERIFY(s.steps_total >= 6);
        QCOMPARE(s.step_seconds.count, s.steps_total);
        QCOMPARE(s.batch_size.count, s.steps_total);
        QCOMPARE(s.sampled_rows_total, uint64_t(12));
        QCOMPARE(s.host_sampled_rows_total, uint64_t(6));
        QVERIFY(s.forward_seconds_total > 0);
        QCOMPARE(s.computed_tokens_total, uint64_t(2 * (5 + 6 - 1)));
        QCOMPARE(s.preemptions_total, uint64_t(0));
        QCOMPARE(s.running, 0);
        QVERIFY(s.running_by_adapter.empty());
        engine->shutdown();
    }
};

QTEST_GUILESS_MAIN(TstEngineServing)
#include "tst_engine_serving.moc"
