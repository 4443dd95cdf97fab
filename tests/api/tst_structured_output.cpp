// Grammar-constrained decoding through the engine facade on the CPU runner, on a random-weight synthesized model
// that never follows a format by itself: regex, choice and JSON grammars hold for greedy (masked argmax in the
// runner) and sampled (host mask) rows, with logprobs and penalties, within max_tokens (the grammar closes in time),
// under ignore_eos (a complete grammar ends the request), in batches that mix constrained and unconstrained rows on
// different adapters (the unconstrained rows' tokens are exactly those of a run without neighbours), and a grammar
// that does not compile is an invalid_argument naming its error.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "api/engine.h"
#include "engine_test_util.h"

using namespace loradesk;
namespace fs = std::filesystem;

namespace {

struct Output {
    std::string text;
    std::vector<int32_t> ids;
    api::FinishReason reason = api::FinishReason::cancelled;
    int completion_tokens = 0;
};

Output run(api::Engine& engine, const api::GenerateRequest& r) {
    auto submitted = engine.submit(r);
    if (!submitted.ok()) qFatal("submit: %s", submitted.status().message.c_str());
    auto stream = submitted.value();
    Output out;
    for (int i = 0; i < 1200; ++i) {
        auto ev = stream->next(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            out.text += t->text;
            out.ids.insert(out.ids.end(), t->token_ids.begin(), t->token_ids.end());
        } else if (auto* f = std::get_if<api::FinishEvent>(&*ev)) {
            out.reason = f->reason;
            out.completion_tokens = f->usage.completion_tokens;
            return out;
        } else if (auto* e = std::get_if<api::ErrorEvent>(&*ev)) {
            qFatal("request failed: %s", e->status.message.c_str());
        }
    }
    qFatal("request did not finish");
}

api::GenerateRequest request(const std::string& model, const std::string& prompt, const std::string& grammar,
                             int max_tokens, float temperature = 0) {
    api::GenerateRequest r;
    r.model = model;
    r.prompt = prompt;
    r.grammar = grammar;
    r.sampling.temperature = temperature;
    r.sampling.seed = 7;
    r.stop.max_tokens = max_tokens;
    return r;
}

const char* kPhone = "root ::= \"(\" [0-9]{3} \") \" [0-9]{3} \"-\" [0-9]{4}\n";
const char* kChoice = "root ::= \"positive\" | \"negative\" | \"neutral\"\n";
// A small JSON object grammar: {"name": string, "tags": [string, ...], "n": integer}.
const char* kObject =
    "root ::= \"{\\\"name\\\": \" str \", \\\"tags\\\": [\" (str (\", \" str)*)? \"], \\\"n\\\": \" int \"}\"\n"
    "str ::= \"\\\"\" [a-zA-Z0-9 ]* \"\\\"\"\n"
    "int ::= \"-\"? ([0-9] | [1-9] [0-9]{1,8})\n";

}  // namespace

class TstStructuredOutput : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::unique_ptr<api::Engine> m_engine;

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        const std::string model_dir = (fs::path(m_tmp.path().toStdString()) / "tiny").string();
        const model::ModelConfig config = test::synth_tiny_model(model_dir);
        const fs::path adapters = fs::path(m_tmp.path().toStdString()) / "adapters";
        for (int i = 0; i < 2; ++i)
            test::synth_adapter(config, adapters / ("a" + std::to_string(i)), uint64_t(20 + i), 4);
        auto o = test::cpu_options(model_dir, {adapters.string()});
        m_engine = test::start_engine(o);
    }

    void regex_like_grammar_greedy_and_sampled() {
        const std::regex phone(R"(\(\d{3}\) \d{3}-\d{4})");
        for (float t : {0.0f, 1.0f}) {
            for (const char* model : {"", "a0", "a1"}) {
                Output o = run(*m_engine, request(model, "Call me at", kPhone, 40, t));
                QVERIFY2(std::regex_match(o.text, phone), o.text.c_str());
                QCOMPARE(o.reason, api::FinishReason::stop);
            }
        }
    }

    void choice_with_logprobs_and_penalties() {
        auto r = request("a0", "The review was", kChoice, 20, 0.8f);
        r.logprobs = 3;
        r.sampling.repetition_penalty = 1.3f;
        r.sampling.presence_penalty = 0.5f;
        Output o = run(*m_engine, r);
        QVERIFY2(o.text == "positive" || o.text == "negative" || o.text == "neutral", o.text.c_str());
    }

    // max_tokens far below what a random model would write inside the strings: the grammar still closes.
    void json_closes_within_max_tokens() {
        for (int budget : {36, 48, 90}) {  // the shortest object is 33 bytes
            for (float t : {0.0f, 1.0f}) {
                Output o = run(*m_engine, request("a1", "JSON:", kObject, budget, t));
                QVERIFY2(o.completion_tokens <= budget, o.text.c_str());
                auto j = nlohmann::json::parse(o.text, nullptr, false);
                const std::string what =
                    "budget " + std::to_string(budget) + ", temperature " + std::to_string(t) + ": " + o.text;
                QVERIFY2(!j.is_discarded() && j.contains("name") && j["tags"].is_array() && j["n"].is_number_integer(),
                         what.c_str());
                QCOMPARE(o.reason, api::FinishReason::stop);
            }
        }
    }

    void ignore_eos_ends_when_the_grammar_is_complete() {
        auto r = request("", "x", kChoice, 50);
        r.stop.ignore_eos = true;
        Output o = run(*m_engine, r);
        QVERIFY2(o.text == "positive" || o.text == "negative" || o.text == "neutral", o.text.c_str());
        QCOMPARE(o.reason, api::FinishReason::stop);
    }

    // Constrained and unconstrained rows on different adapters share steps; the unconstrained rows are unchanged.
    void mixed_batches_leave_unconstrained_rows_alone() {
        std::vector<Output> alone;
        for (const char* model : {"", "a0", "a1"}) alone.push_back(run(*m_engine, request(model, "Once upon", "", 24)));
        std::vector<std::shared_ptr<api::RequestStream>> streams;
        std::vector<api::GenerateRequest> reqs;
        for (int round = 0; round < 2; ++round)
            for (const char* model : {"", "a0", "a1"}) {
                reqs.push_back(request(model, "Once upon", "", 24));
                reqs.push_back(request(model, "JSON:", kObject, 60, round ? 1.0f : 0.0f));
            }
        std::vector<std::thread> threads;
        std::vector<Output> outs(reqs.size());
        for (std::size_t i = 0; i < reqs.size(); ++i)
            threads.emplace_back([&, i] { outs[i] = run(*m_engine, reqs[i]); });
        for (auto& t : threads) t.join();
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            if (reqs[i].grammar.empty()) {
                QCOMPARE(outs[i].ids, alone[(i / 2) % 3].ids);
            } else {
                QVERIFY2(!nlohmann::json::parse(outs[i].text, nullptr, false).is_discarded(), outs[i].text.c_str());
            }
        }
    }

    void bad_grammar_is_invalid_argument() {
        auto submitted = m_engine->submit(request("", "x", "root ::= undefined_rule\n", 5));
        QVERIFY(!submitted.ok());
        QCOMPARE(submitted.status().code, ErrorCode::invalid_argument);
        QVERIFY2(submitted.status().message.find("undefined_rule") != std::string::npos,
                 submitted.status().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TstStructuredOutput)
#include "tst_structured_output.moc"
