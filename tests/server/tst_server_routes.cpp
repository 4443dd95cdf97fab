// engine/server routes without sockets, against the scripted engine: every endpoint, non-streamed response
// bodies (key order and shapes per OpenAI), every error class and status, API key, CORS, body limit.
#include <QtTest>

#include <filesystem>

#include "scripted_engine.h"
#include "server/router.h"
#include "server_test_util.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;
using nlohmann::json;

namespace {

json body_of(const HttpResponse& r) { return json::parse(r.body); }

std::string error_code(const HttpResponse& r) {
    const json e = body_of(r)["error"];
    return e["code"].is_string() ? e["code"].get<std::string>() : std::to_string(e["code"].get<int>());
}

}  // namespace

class TstServerRoutes : public QObject {
    Q_OBJECT
    ScriptedEngine m_engine;
    Router m_router{m_engine, ServerOptions{}};

  private slots:
    void models_list_base_and_servable_adapters() {
        HttpResponse r = m_router.handle(make_request("GET", "/v1/models"));
        QCOMPARE(r.status, 200);
        const json b = body_of(r);
        QCOMPARE(b["object"].get<std::string>(), std::string("list"));
        std::vector<std::string> ids;
        for (const json& m : b["data"]) ids.push_back(m["id"]);
        QCOMPARE(ids, (std::vector<std::string>{"tiny-base", "chat-lora", "sql-lora"}));  // dora-lora: incompatible
        QVERIFY(b["data"][0]["parent"].is_null());
        QCOMPARE(b["data"][2]["parent"].get<std::string>(), std::string("tiny-base"));
        QCOMPARE(b["data"][2]["root"].get<std::string>(), std::string("/adapters/sql-lora"));
        QCOMPARE(b["data"][2]["max_model_len"].get<int>(), 4096);
        QCOMPARE(b["data"][2]["created"].get<int64_t>(), int64_t(1700000000));  // the adapter's registration time
        const std::string head = "{\"object\":\"list\",\"data\":[{\"id\":\"tiny-bas";
        QCOMPARE(r.body.substr(0, 40), head);
        QCOMPARE(m_router.handle(make_request("GET", "/models")).body.size(), r.body.size());
    }
    void models_show_the_base_quantization() {
        const json plain = body_of(m_router.handle(make_request("GET", "/v1/models")));
        QVERIFY(plain["data"][0].contains("quantization") && plain["data"][0]["quantization"].is_null());
        m_engine.set_quantization("awq", "awq int4, group 128");
        const json list = body_of(m_router.handle(make_request("GET", "/v1/models")));
        const json one = body_of(m_router.handle(make_request("GET", "/v1/models/tiny-base")));
        m_engine.set_quantization("", "");
        for (const json& base : {list["data"][0], one}) {
            QCOMPARE(base["quantization"]["method"], json("awq"));
            QCOMPARE(base["quantization"]["detail"], json("awq int4, group 128"));
        }
        QVERIFY(!list["data"][1].contains("quantization"));  // adapters run on the base; their entries say nothing
    }
    void model_by_id_and_alias() {
        QCOMPARE(body_of(m_router.handle(make_request("GET", "/v1/models/sql-lora")))["id"], json("sql-lora"));
        QCOMPARE(body_of(m_router.handle(make_request("GET", "/v1/models/sql")))["id"], json("sql"));
        // As generation accepts it: BASE:ADAPTER (and base:ADAPTER), answered under the id asked for.
        for (const char* id : {"tiny-base:sql-lora", "base:sql-lora", "tiny-base:sql"}) {
            const json m = body_of(m_router.handle(make_request("GET", std::string("/v1/models/") + id)));
            QCOMPARE(m["id"], json(id));
            QCOMPARE(m["root"], json("/adapters/sql-lora"));
            QCOMPARE(m["parent"], json("tiny-base"));
        }
        QCOMPARE(body_of(m_router.handle(make_request("GET", "/v1/models/tiny-base")))["parent"], json(nullptr));
        for (const char* id : {"other-base:sql-lora", "tiny-base:nope", "tiny-base:dora-lora", "dora-lora"})
            QCOMPARE(m_router.handle(make_request("GET", std::string("/v1/models/") + id)).status, 404);
        HttpResponse r = m_router.handle(make_request("GET", "/v1/models/nope"));
        QCOMPARE(r.status, 404);
        QCOMPARE(error_code(r), std::string("model_not_found"));
        QCOMPARE(body_of(r)["error"]["param"], json("model"));
    }
    void health_and_unavailable() {
        HttpResponse r = m_router.handle(make_request("GET", "/health"));
        QCOMPARE(r.status, 200);
        const std::string ok = R"({"status":"ok"})";
        QCOMPARE(r.body, ok);
        m_router.set_unavailable("Loading model");
        r = m_router.handle(make_request("GET", "/health"));
        QCOMPARE(r.status, 503);
        QCOMPARE(r.header("Retry-After"), std::string("1"));
        QCOMPARE(body_of(r)["error"]["message"], json("Loading model"));
        r = m_router.handle(post_json("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}}));
        QCOMPARE(r.status, 503);
        m_router.set_available();
        QCOMPARE(m_router.handle(make_request("GET", "/v1/health")).status, 200);
    }

    void chat_non_streamed_body() {
        HttpResponse r = m_router.handle(
            post_json("/v1/chat/completions",
                      {{"model", "sql-lora"}, {"messages", {{{"role", "user"}, {"content", "hi there"}}}}}));
        QCOMPARE(r.status, 200);
        const json b = body_of(r);
        QVERIFY(b["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
        QCOMPARE(b["id"].get<std::string>().size(), std::size_t(9 + 24));
        // Key order of OpenAI's examples (ordered output), with the varying id/created cut out.
        const std::string model_key = R"(,"model")";
        const std::string tail = r.body.substr(r.body.find(model_key));
        const std::string expected =
            R"(,"model":"sql-lora","system_fingerprint":null,"choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":"Hello, world!","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":)"
            R"({"prompt_tokens":2,"completion_tokens":4,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}}})";
        QCOMPARE(tail, expected);
        QCOMPARE(r.header("x-adapter-tier"), std::string("gpu"));
        QCOMPARE(r.header("x-adapter-load-ms"), std::string("12.5"));
        QCOMPARE(r.header("x-prefix-hit-tokens"), std::string("0"));
    }
    void chat_without_v1_prefix_and_base_model() {
        HttpResponse r =
            m_router.handle(post_json("/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(body_of(r)["model"], json("tiny-base"));
        QCOMPARE(r.header("x-adapter-tier"), std::string("base"));
    }
    void chat_length_logprobs_and_n() {
        HttpResponse r = m_router.handle(
            post_json("/v1/chat/completions", {{"model", "tiny-base:sql-lora"},
                                               {"n", 2},
                                               {"max_tokens", 2},
                                               {"logprobs", true},
                                               {"top_logprobs", 2},
                                               {"messages", {{{"role", "user"}, {"content", "a b c"}}}}}));
        QCOMPARE(r.status, 200);
        const json b = body_of(r);
        QCOMPARE(b["choices"].size(), std::size_t(2));
        QCOMPARE(b["choices"][1]["index"], json(1));
        QCOMPARE(b["choices"][0]["finish_reason"], json("length"));
        QCOMPARE(b["choices"][0]["message"]["content"], json("Hello,"));
        const nlohmann::ordered_json lp = nlohmann::ordered_json::parse(r.body)["choices"][0]["logprobs"];
        QCOMPARE(lp["content"].size(), std::size_t(2));
        const std::string expected =
            R"({"token":"Hello","logprob":-0.25,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello",)"
            R"("logprob":-0.25,"bytes":[72,101,108,108,111]},{"token":"alt1","logprob":-2.0,"bytes":[97,108,116,49]}]})";
        QCOMPARE(lp["content"][0].dump(), expected);
        QVERIFY(lp["refusal"].is_null());
        // Prompt tokens count once per prompt, completion tokens per choice.
        QCOMPARE(b["usage"]["prompt_tokens"], json(3));
        QCOMPARE(b["usage"]["completion_tokens"], json(4));
        QCOMPARE(int(m_engine.requests().back().logprobs), 2);
    }
    // n choices with a seed sample with seed, seed + 1, ... (as vLLM), not n times the same seed.
    void seeded_choices_get_their_own_seeds() {
        const std::size_t before = m_engine.requests().size();
        HttpResponse r = m_router.handle(post_json("/v1/completions", {{"prompt", "a b"}, {"n", 3}, {"seed", 41}}));
        QCOMPARE(r.status, 200);
        const auto reqs = m_engine.requests();
        QCOMPARE(reqs.size(), before + 3);
        for (std::size_t k = 0; k < 3; ++k) QCOMPARE(*reqs[before + k].sampling.seed, uint64_t(41 + k));
    }
    void chat_tool_calls_and_reasoning() {
        json req = {{"messages", {{{"role", "user"}, {"content", "weather? #tool"}}}},
                    {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}};
        json b = body_of(m_router.handle(post_json("/v1/chat/completions", req)));
        QCOMPARE(b["choices"][0]["finish_reason"], json("tool_calls"));
        const json msg = b["choices"][0]["message"];
        QCOMPARE(msg["content"], json("Let me check."));
        QCOMPARE(msg["tool_calls"].size(), std::size_t(1));
        QVERIFY(msg["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0) == 0);
        QCOMPARE(msg["tool_calls"][0]["type"], json("function"));
        QCOMPARE(msg["tool_calls"][0]["function"]["name"], json("get_weather"));
        const json arguments = R"({"city":"Paris"})";
        QCOMPARE(msg["tool_calls"][0]["function"]["arguments"], arguments);
        QVERIFY(!msg["tool_calls"][0].contains("index"));
        // Without tools the same text is plain content.
        req.erase("tools");
        b = body_of(m_router.handle(post_json("/v1/chat/completions", req)));
        QCOMPARE(b["choices"][0]["finish_reason"], json("stop"));
        QVERIFY(!b["choices"][0]["message"].contains("tool_calls"));
        QVERIFY(b["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>") != std::string::npos);
        b = body_of(m_router.handle(
            post_json("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "#think"}}}}})));
        QCOMPARE(b["choices"][0]["message"]["reasoning_content"], json("Pondering."));
        QCOMPARE(b["choices"][0]["message"]["content"], json("Answer."));
    }
    void stop_strings_reach_the_engine() {
        json b = body_of(
            m_router.handle(post_json("/v1/chat/completions", {{"stop", {"world", "x", "y", "z", "w"}},
                                                               {"messages", {{{"role", "user"}, {"content", "q"}}}}})));
        QCOMPARE(b["choices"][0]["message"]["content"], json("Hello, "));
        QCOMPARE(b["choices"][0]["finish_reason"], json("stop"));
        QCOMPARE(m_engine.requests().back().stop.stop.size(), std::size_t(5));
    }
    void completions_forms_echo_and_logprobs() {
        HttpResponse r = m_router.handle(
            post_json("/v1/completions",
                      {{"model", "sql"}, {"prompt", "Say"}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 2}}));
        QCOMPARE(r.status, 200);
        const json b = body_of(r);
        QVERIFY(b["id"].get<std::string>().rfind("cmpl-", 0) == 0);
        QCOMPARE(b["object"], json("text_completion"));
        QVERIFY(!b.contains("system_fingerprint"));
        const json c = b["choices"][0];
        QCOMPARE(c["text"], json("SayHello,"));
        QCOMPARE(c["finish_reason"], json("length"));
        // echo + logprobs: the scored prompt first (its first token has no logprob), then the completion.
        const std::string expected = R"({"tokens":["Say","Hello",","],"token_logprobs":[null,-0.25,-0.5],)"
                                     R"("top_logprobs":[null,{"Hello":-0.25},{",":-0.5}],"text_offset":[0,3,8]})";
        QCOMPARE(nlohmann::ordered_json::parse(r.body)["choices"][0]["logprobs"].dump(), expected);
        const std::string choices_key = R"(,"choices")", choices_head = ",\"choices\":[{\"index\":0,\"text\":";
        QCOMPARE(r.body.substr(r.body.find(choices_key)).substr(0, 30), choices_head);
        // Token-id prompts are echoed through detokenize; a batch of prompts gives prompts x n choices.
        const json batch = body_of(
            m_router.handle(post_json("/completions", {{"prompt", {{74, 75}, {76}}}, {"n", 2}, {"echo", true}})));
        QCOMPARE(batch["choices"].size(), std::size_t(4));
        QCOMPARE(batch["choices"][0]["text"], json("HIHello, world!"));
        QCOMPARE(batch["choices"][3]["index"], json(3));
        QCOMPARE(batch["usage"]["prompt_tokens"], json(3));
        QCOMPARE(batch["usage"]["completion_tokens"], json(16));
    }
    // lm-eval's loglikelihood request: echo, logprobs, max_tokens 0 -> the prompt scored, nothing generated.
    void echo_logprobs_scores_the_prompt() {
        HttpResponse r = m_router.handle(post_json(
            "/v1/completions", {{"prompt", "the cat sat"}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(m_engine.requests().back().prompt_logprobs, 2);
        QCOMPARE(m_engine.requests().back().stop.max_tokens, 0);
        const nlohmann::ordered_json b = nlohmann::ordered_json::parse(r.body);
        const auto& c = b["choices"][0];
        QCOMPARE(c["text"].get<std::string>(), std::string("the cat sat"));
        QCOMPARE(c["finish_reason"].get<std::string>(), std::string("length"));
        QCOMPARE(b["usage"]["completion_tokens"].get<int>(), 0);
        // top_logprobs: the k alternatives plus the prompt token itself, as OpenAI's.
        const std::string expected =
            R"({"tokens":["the"," cat"," sat"],"token_logprobs":[null,-0.5,-1.0],"top_logprobs":[null,)"
            R"({"alt1":-0.125,"alt2":-0.25," cat":-0.5},{"alt1":-0.125,"alt2":-0.25," sat":-1.0}],"text_offset":[0,3,7]})";
        QCOMPARE(QString::fromStdString(c["logprobs"].dump()), QString::fromStdString(expected));
        QVERIFY(!c.contains("prompt_logprobs"));

        // A batch of token-id prompts, n = 2: each choice has its own prompt's tokens, then its completion.
        const json batch = body_of(m_router.handle(
            post_json("/v1/completions",
                      {{"prompt", {{5, 6, 7}, {8}}}, {"n", 2}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 1}})));
        QCOMPARE(batch["choices"].size(), std::size_t(4));
        for (int i = 0; i < 4; ++i) {
            const json& lp = batch["choices"][i]["logprobs"];
            const std::vector<std::string> want =
                i < 2 ? std::vector<std::string>{"t5", "t6", "t7", "Hello"} : std::vector<std::string>{"t8", "Hello"};
            QCOMPARE(lp["tokens"].get<std::vector<std::string>>(), want);
            QVERIFY(lp["token_logprobs"][0].is_null());
            QCOMPARE(lp["token_logprobs"].back(), json(-0.25));
            QCOMPARE(lp["text_offset"].size(), want.size());
            if (i < 2) QCOMPARE(lp["token_logprobs"][2], json(-1.0));
        }
        // Without echo the prompt is neither scored nor returned.
        const json plain = body_of(m_router.handle(post_json("/v1/completions", {{"prompt", "a b"}, {"logprobs", 1}})));
        QCOMPARE(m_engine.requests().back().prompt_logprobs, -1);
        QCOMPARE(plain["choices"][0]["logprobs"]["tokens"][0], json("Hello"));
    }
    void max_tokens_zero_needs_a_scored_prompt() {
        HttpResponse r = m_router.handle(post_json("/v1/completions", {{"prompt", "a b"}, {"max_tokens", 0}}));
        QCOMPARE(r.status, 400);
        QCOMPARE(body_of(r)["error"]["param"], json("max_tokens"));
        QVERIFY(body_of(r)["error"]["message"].get<std::string>().find("echo") != std::string::npos);
        r = m_router.handle(post_json("/v1/chat/completions",
                                      {{"max_tokens", 0}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}));
        QCOMPARE(r.status, 400);
        // echo without logprobs: the prompt comes back, nothing is generated.
        const json echo = body_of(
            m_router.handle(post_json("/v1/completions", {{"prompt", "a b"}, {"echo", true}, {"max_tokens", 0}})));
        QCOMPARE(echo["choices"][0]["text"], json("a b"));
        QVERIFY(echo["choices"][0]["logprobs"].is_null());
        QCOMPARE(echo["usage"]["completion_tokens"], json(0));
    }
    // vLLM's prompt_logprobs field: a list per choice, null first, then {id: {logprob, rank, decoded_token}}.
    void vllm_prompt_logprobs() {
        const nlohmann::ordered_json b = nlohmann::ordered_json::parse(
            m_router
                .handle(post_json("/v1/completions", {{"prompt", "a b"}, {"prompt_logprobs", 1}, {"max_tokens", 1}}))
                .body);
        const std::string expected =
            R"([null,{"11":{"logprob":-0.5,"rank":1,"decoded_token":" b"},"600":{"logprob":-0.125,"rank":1,)"
            R"("decoded_token":"alt1"}}])";
        QCOMPARE(QString::fromStdString(b["choices"][0]["prompt_logprobs"].dump()), QString::fromStdString(expected));
        QVERIFY(b["choices"][0]["logprobs"].is_null());
        const json chat = body_of(m_router.handle(post_json(
            "/v1/chat/completions",
            {{"prompt_logprobs", 0}, {"max_tokens", 0}, {"messages", {{{"role", "user"}, {"content", "x y z"}}}}})));
        QCOMPARE(chat["choices"][0]["prompt_logprobs"].size(), std::size_t(3));
        QCOMPARE(chat["prompt_logprobs"], chat["choices"][0]["prompt_logprobs"]);
        QCOMPARE(chat["prompt_logprobs"][2]["12"]["logprob"], json(-1.0));
        QCOMPARE(chat["choices"][0]["finish_reason"], json("length"));
        HttpResponse bad = m_router.handle(post_json("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", 21}}));
        QCOMPARE(bad.status, 400);
        QCOMPARE(body_of(bad)["error"]["param"], json("prompt_logprobs"));
    }
    void best_of() {
        HttpResponse r = m_router.handle(post_json("/v1/completions", {{"prompt", "a"}, {"n", 2}, {"best_of", 1}}));
        QCOMPARE(r.status, 400);
        QCOMPARE(body_of(r)["error"]["param"], json("best_of"));
        r = m_router.handle(post_json("/v1/completions", {{"prompt", "a"}, {"best_of", 2}, {"stream", true}}));
        QCOMPARE(r.status, 400);
        QCOMPARE(body_of(r)["error"]["param"], json("best_of"));
        // Seeds 5, 6, 7 lower the scripted logprobs by 0.5, 0.6 and 0: the seed-7 candidate (k = 2) wins.
        const std::size_t before = m_engine.requests().size();
        const json b = body_of(m_router.handle(post_json(
            "/v1/completions", {{"prompt", "a"}, {"best_of", 3}, {"seed", 5}, {"logprobs", 0}, {"max_tokens", 2}})));
        QCOMPARE(m_engine.requests().size(), before + 3);
        QCOMPARE(b["choices"].size(), std::size_t(1));
        QCOMPARE(b["choices"][0]["index"], json(0));
        QCOMPARE(b["choices"][0]["logprobs"]["token_logprobs"][0], json(-0.25));
        QCOMPARE(b["usage"]["completion_tokens"], json(6));  // every candidate counts
        // Logprobs not asked for: they ranked the candidates but are not returned.
        const json quiet =
            body_of(m_router.handle(post_json("/v1/completions", {{"prompt", "a"}, {"n", 2}, {"best_of", 3}})));
        QCOMPARE(quiet["choices"].size(), std::size_t(2));
        QVERIFY(quiet["choices"][1]["logprobs"].is_null());
        QCOMPARE(quiet["choices"][1]["index"], json(1));
    }
    void cached_tokens_in_usage_and_header() {
        m_engine.set_cached_tokens(2);
        HttpResponse r = m_router.handle(post_json("/v1/completions", {{"prompt", "a b c"}}));
        m_engine.set_cached_tokens(0);
        QCOMPARE(body_of(r)["usage"]["prompt_tokens_details"]["cached_tokens"], json(2));
        QCOMPARE(r.header("x-prefix-hit-tokens"), std::string("2"));
    }

    void error_classes_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("body");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("param");
        const QString chat = "/v1/chat/completions";
        auto msg = [](const char* model, const char* text) {
            return QString(R"({"model":"%1","messages":[{"role":"user","content":"%2"}]})").arg(model, text);
        };
        QTest::newRow("bad json") << chat << "{oops" << 400 << "invalid_request_error"
                                  << "400"
                                  << "";
        QTest::newRow("unknown model") << chat << msg("gpt-99", "x") << 404 << "invalid_request_error"
                                       << "model_not_found"
                                       << "model";
        QTest::newRow("incompatible adapter") << chat << msg("dora-lora", "x") << 400 << "invalid_request_error"
                                              << "unsupported"
                                              << "messages";
        QTest::newRow("queue full") << chat << msg("", "#busy") << 429 << "rate_limit_error"
                                    << "rate_limit_exceeded"
                                    << "";
        QTest::newRow("loading") << chat << msg("", "#unavailable") << 503 << "unavailable_error"
                                 << "503"
                                 << "";
        QTest::newRow("overflow") << chat << msg("", "#overflow") << 400 << "invalid_request_error"
                                  << "context_length_exceeded"
                                  << "messages";
        QTest::newRow("overflow completions") << "/v1/completions"
                                              << R"({"prompt":"#overflow"})" << 400 << "invalid_request_error"
                                              << "context_length_exceeded"
                                              << "prompt";
        QTest::newRow("engine error") << chat << msg("", "#fail") << 500 << "server_error"
                                      << "500"
                                      << "";
        QTest::newRow("engine cancel") << chat << msg("", "#engine-cancel") << 503 << "unavailable_error"
                                       << "503"
                                       << "";
        QTest::newRow("unknown route") << "/v2/nothing"
                                       << "{}" << 404 << "not_found_error"
                                       << "not_found"
                                       << "";
        QTest::newRow("response_format")
            << chat
            << R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","not":{}}}}})"
            << 400 << "invalid_request_error"
            << "unsupported"
            << "response_format.json_schema.schema";
    }
    void error_classes() {
        QFETCH(QString, path);
        QFETCH(QString, body);
        QFETCH(int, status);
        QFETCH(QString, type);
        QFETCH(QString, code);
        QFETCH(QString, param);
        const int cancelled_before = m_engine.cancelled();
        HttpResponse r = m_router.handle(make_request("POST", path.toStdString(), body.toStdString()));
        QCOMPARE(r.status, status);
        const json e = body_of(r)["error"];
        QVERIFY2(e["message"].get<std::string>().size() > 5, r.body.c_str());
        QCOMPARE(QString::fromStdString(e["type"]), type);
        QCOMPARE(QString::fromStdString(error_code(r)), code);
        QCOMPARE(QString::fromStdString(e["param"].is_null() ? "" : e["param"].get<std::string>()), param);
        QCOMPARE(r.header("Retry-After").empty(), status != 429 && status != 503);
        QCOMPARE(m_engine.live_streams(), 0);
        Q_UNUSED(cancelled_before);
    }
    void overflow_uses_openai_wording() {
        HttpResponse r = m_router.handle(
            post_json("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "#overflow"}}}}}));
        QCOMPARE(body_of(r)["error"]["message"].get<std::string>(),
                 std::string("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
                             "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages "
                             "or completion."));
    }
    void method_not_allowed() {
        QCOMPARE(m_router.handle(make_request("GET", "/v1/chat/completions")).status, 405);
        QCOMPARE(m_router.handle(make_request("POST", "/v1/models")).status, 405);
    }

    void api_key_required_when_configured() {
        ServerOptions o;
        o.api_key = "sekret";
        Router router(m_engine, o);
        const HttpRequest plain = make_request("GET", "/v1/models");
        HttpResponse r = router.handle(plain);
        QCOMPARE(r.status, 401);
        QCOMPARE(error_code(r), std::string("invalid_api_key"));
        QCOMPARE(body_of(r)["error"]["type"], json("authentication_error"));
        QCOMPARE(router.handle(make_request("GET", "/v1/models", {}, {{"Authorization", "Bearer wrong"}})).status, 401);
        QCOMPARE(router.handle(make_request("GET", "/v1/models", {}, {{"Authorization", "Bearer sekret"}})).status,
                 200);
        QCOMPARE(router.handle(make_request("GET", "/v1/models", {}, {{"x-api-key", "sekret"}})).status, 200);
        QCOMPARE(router.handle(make_request("GET", "/v1/models", {}, {{"api-key", "sekret"}})).status, 200);
        QCOMPARE(router.handle(make_request("GET", "/v1/models", {}, {{"Authorization", "Bearer sekretX"}})).status,
                 401);
        QCOMPARE(router.handle(make_request("GET", "/health")).status, 200);  // public
        // Without a configured key any key (or none) is accepted.
        QCOMPARE(m_router.handle(make_request("GET", "/v1/models", {}, {{"Authorization", "Bearer sk-no-key"}})).status,
                 200);
    }
    void cors_preflight_and_origins() {
        HttpResponse r = m_router.handle(
            make_request("OPTIONS", "/v1/chat/completions", {},
                         {{"Origin", "http://localhost:3000"},
                          {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}}));
        QCOMPARE(r.status, 204);
        QCOMPARE(r.header("Access-Control-Allow-Origin"), std::string("http://localhost:3000"));
        QCOMPARE(r.header("Access-Control-Allow-Headers"), std::string("authorization,content-type,x-stainless-os"));
        QCOMPARE(r.header("Access-Control-Allow-Methods"), std::string("GET, POST, OPTIONS"));
        QCOMPARE(r.header("Access-Control-Max-Age"), std::string("86400"));
        r = m_router.handle(make_request("GET", "/v1/models", {}, {{"Origin", "http://127.0.0.1:8080"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("Access-Control-Allow-Origin"), std::string("http://127.0.0.1:8080"));
        for (const char* evil : {"http://evil.example", "http://localhost.evil.example:80", "http://localhost:80x"}) {
            r = m_router.handle(
                make_request("POST", "/v1/unload_lora_adapter", R"({"lora_name":"sql-lora"})", {{"Origin", evil}}));
            QCOMPARE(r.status, 403);
            QVERIFY(r.header("Access-Control-Allow-Origin").empty());
        }
        QVERIFY(m_engine.adapter("sql-lora").ok());
        // Same-origin / non-browser requests (no Origin) are unaffected.
        QCOMPARE(m_router.handle(make_request("GET", "/v1/models")).header("Access-Control-Allow-Origin"),
                 std::string());
    }
    void host_header_checked_on_keyless_loopback_data() {
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("api_key");
        QTest::addColumn<int>("status");
        QTest::newRow("127.0.0.1:port") << "127.0.0.1:8080"
                                        << "" << 200;
        QTest::newRow("localhost") << "LocalHost"
                                   << "" << 200;
        QTest::newRow("ipv6") << "[::1]:8080"
                              << "" << 200;
        QTest::newRow("rebinding name") << "attacker.example:8080"
                                        << "" << 403;
        QTest::newRow("with a key any host") << "attacker.example"
                                             << "k" << 200;
    }
    void host_header_checked_on_keyless_loopback() {
        QFETCH(QString, host);
        QFETCH(QString, api_key);
        QFETCH(int, status);
        ServerOptions o;
        o.api_key = api_key.toStdString();
        Router router(m_engine, o);
        HttpResponse r =
            router.handle(make_request("GET", "/v1/models", {}, {{"Host", host.toStdString()}, {"x-api-key", "k"}}));
        QCOMPARE(r.status, status);
        if (status == 403) QCOMPARE(error_code(r), std::string("host_not_allowed"));
    }
    void body_limit() {
        ServerOptions o;
        o.max_body_bytes = 100;
        Router router(m_engine, o);
        HttpResponse r = router.handle(make_request("POST", "/v1/completions", std::string(101, ' ')));
        QCOMPARE(r.status, 413);
        QCOMPARE(error_code(r), std::string("request_too_large"));
    }

    void tokenize_and_detokenize() {
        json b = body_of(m_router.handle(post_json("/tokenize", {{"prompt", "AB"}, {"return_token_strs", true}})));
        QCOMPARE(b["tokens"], json({1, 67, 68}));
        QCOMPARE(b["count"], json(3));
        QCOMPARE(b["max_model_len"], json(4096));
        QCOMPARE(b["token_strs"], json({"<s>", "A", "B"}));
        b = body_of(m_router.handle(post_json("/tokenize", {{"prompt", "AB"}, {"add_special_tokens", false}})));
        QCOMPARE(b["tokens"], json({67, 68}));
        b = body_of(m_router.handle(post_json("/tokenize", {{"messages", {{{"role", "user"}, {"content", "A"}}}}})));
        QCOMPARE(b["count"], json(std::string("<|user|>A\n<|assistant|>").size()));  // no BOS for chat by default
        b = body_of(m_router.handle(post_json("/detokenize", {{"tokens", {1, 67, 68}}})));
        QCOMPARE(b["prompt"], json("<s>AB"));
        QCOMPARE(m_router.handle(post_json("/detokenize", {{"tokens", {99999}}})).status, 400);
        QCOMPARE(m_router.handle(post_json("/detokenize", {{"tokens", "x"}})).status, 400);
        QCOMPARE(m_router.handle(post_json("/tokenize", json::object())).status, 400);
    }

    void adapter_admin_routes() {
        QTemporaryDir tmp;
        const std::string root = tmp.path().toStdString();
        std::filesystem::create_directories(root + "/new-lora");
        ServerOptions o;
        o.adapter_roots = {root};
        Router router(m_engine, o);
        HttpResponse r = router.handle(
            post_json("/v1/load_lora_adapter", {{"lora_name", "new"}, {"lora_path", root + "/new-lora"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, std::string("Success: LoRA adapter 'new' added successfully"));
        QVERIFY(r.content_type.rfind("text/plain", 0) == 0);
        r = router.handle(
            post_json("/v1/load_lora_adapter", {{"lora_name", "new"}, {"lora_path", root + "/new-lora"}}));
        QCOMPARE(r.status, 409);
        QCOMPARE(body_of(r)["error"]["param"], json("lora_name"));
        r = router.handle(post_json("/v1/load_lora_adapter", {{"lora_name", "x"}, {"lora_path", root + "/../"}}));
        QCOMPARE(r.status, 400);
        QCOMPARE(body_of(r)["error"]["param"], json("lora_path"));
        QCOMPARE(router.handle(post_json("/v1/load_lora_adapter", {{"lora_path", root}})).status, 400);

        r = router.handle(make_request("POST", "/v1/adapters/new/pin"));
        QCOMPARE(r.status, 200);
        QCOMPARE(body_of(r)["pinned"], json(true));
        const json list = body_of(router.handle(make_request("GET", "/v1/adapters")));
        bool found = false;
        for (const json& a : list["data"]) {
            if (a["name"] != "new") continue;
            found = true;
            QCOMPARE(a["tier"], json("disk"));
            QCOMPARE(a["rank"], json(4));
            QCOMPARE(a["digest"].get<std::string>().size(), std::size_t(64));
            QVERIFY(a.contains("size_bytes") && a.contains("requests_total") && a.contains("generated_tokens_total"));
        }
        QVERIFY(found);
        QCOMPARE(body_of(router.handle(make_request("POST", "/v1/adapters/new/unpin")))["pinned"], json(false));
        QCOMPARE(router.handle(make_request("POST", "/v1/adapters/ghost/pin")).status, 404);
        QCOMPARE(body_of(router.handle(make_request("GET", "/v1/adapters/dora-lora")))["incompatibility"],
                 json("uses DoRA, which loradesk cannot apply exactly"));

        r = router.handle(post_json("/v1/unload_lora_adapter", {{"lora_name", "new"}}));
        QCOMPARE(r.body, std::string("Success: LoRA adapter 'new' removed successfully"));
        QCOMPARE(router.handle(post_json("/v1/unload_lora_adapter", {{"lora_name", "new"}})).status, 404);
    }
    void lora_path_in_a_request_loads_the_adapter() {
        QTemporaryDir tmp;
        const std::string root = tmp.path().toStdString();
        std::filesystem::create_directories(root + "/path-lora");
        ServerOptions o;
        o.adapter_roots = {root};
        Router router(m_engine, o);
        HttpResponse r =
            router.handle(post_json("/v1/completions", {{"prompt", "x"}, {"lora_path", root + "/path-lora"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(m_engine.requests().back().model, std::string("path-lora"));
        QCOMPARE(body_of(r)["model"], json("path-lora"));
        QVERIFY(m_engine.unload_adapter("path-lora").ok());
    }
};

QTEST_GUILESS_MAIN(TstServerRoutes)
#include "tst_server_routes.moc"
