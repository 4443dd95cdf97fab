// Ollama's API (/api/*) without sockets, against the scripted engine: every endpoint, NDJSON framing, the
// mapping of options, think and keep_alive onto the engine's request and pins, tool calls with object arguments,
// refusals of what loradesk does not do, errors in Ollama's {"error": "..."} shape before and during a stream,
// and cancellation when the client goes.
#include <QtTest>
#include <limits>
#include <regex>

#include "scripted_engine.h"
#include "server/router.h"
#include "server_test_util.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;
using nlohmann::json;

namespace {

json body_of(const HttpResponse& r) { return json::parse(r.body); }

// The objects of an NDJSON body; fails the test on a line that is not one JSON object or a missing final newline.
std::vector<json> ndjson(const std::string& body) {
    std::vector<json> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
        const std::size_t end = body.find('\n', pos);
        if (end == std::string::npos) {
            out.push_back(json("<unterminated>" + body.substr(pos)));
            break;
        }
        const json j = json::parse(body.substr(pos, end - pos), nullptr, false);
        out.push_back(j.is_object() ? j : json("<not an object>" + body.substr(pos, end - pos)));
        pos = end + 1;
    }
    return out;
}

bool is_rfc3339(const json& v) {
    static const std::regex re(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)");
    return v.is_string() && std::regex_match(v.get<std::string>(), re);
}

json user(const std::string& content) { return json::array({{{"role", "user"}, {"content", content}}}); }

}  // namespace

class TstOllamaRoutes : public QObject {
    Q_OBJECT
    ScriptedEngine m_engine;
    Router m_router{m_engine, ServerOptions{}};

    HttpResponse post(const std::string& path, const json& body) { return m_router.handle(post_json(path, body)); }
    HttpResponse get(const std::string& path) { return m_router.handle(make_request("GET", path)); }
    const api::GenerateRequest last_request() const { return m_engine.requests().back(); }
    std::string error_of(const HttpResponse& r) {
        const json b = body_of(r);
        return b.contains("error") && b["error"].is_string() ? b["error"].get<std::string>() : "<not Ollama's shape>";
    }

  private slots:
    void version() {
        const HttpResponse r = get("/api/version");
        QCOMPARE(r.status, 200);
        QCOMPARE(body_of(r), json({{"version", "0.12.0"}}));
    }

    void quantization_level_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("level");
        QTest::newRow("unquantized") << ""
                                     << "BF16";  // from bytes per weight, as before
        QTest::newRow("fp8 block") << "fp8"
                                   << "FP8";
        QTest::newRow("fp8 channel") << "fp8-channel"
                                     << "FP8";
        QTest::newRow("awq") << "awq"
                             << "AWQ-INT4";
        QTest::newRow("gptq") << "gptq"
                              << "GPTQ-INT4";
    }
    void quantization_level() {
        QFETCH(QString, method);
        QFETCH(QString, level);
        m_engine.set_quantization(method.toStdString(), method.toStdString());
        const json b = body_of(get("/api/tags"));
        m_engine.set_quantization("", "");
        QCOMPARE(b["models"][0]["details"]["quantization_level"], json(level.toStdString()));
    }

    void tags_list_base_and_servable_adapters() {
        const json b = body_of(get("/api/tags"));
        std::vector<std::string> names;
        for (const json& m : b["models"]) names.push_back(m["name"]);
        // dora-lora cannot be served and is not listed.
        QCOMPARE(names, (std::vector<std::string>{"tiny-base", "tiny-base:chat-lora", "tiny-base:sql-lora"}));
        const json& sql = b["models"][2];
        QCOMPARE(sql["model"], json("tiny-base:sql-lora"));
        QCOMPARE(sql["digest"], json(std::string(64, 'a')));
        QCOMPARE(sql["size"], json(1 << 20));
        QCOMPARE(sql["modified_at"], json("2023-11-14T22:13:20.000000Z"));  // created_unix 1700000000
        const json details = {{"parent_model", "tiny-base"}, {"format", "safetensors"},
                              {"family", "qwen3"},           {"families", {"qwen3"}},
                              {"parameter_size", "6.1M"},    {"quantization_level", "BF16"}};
        QCOMPARE(sql["details"], details);
        QCOMPARE(b["models"][0]["details"]["parent_model"], json(""));
        QCOMPARE(b["models"][0]["size"], json(12200000));
        QVERIFY(is_rfc3339(b["models"][0]["modified_at"]));
    }

    void show_base_and_adapter() {
        json b = body_of(post("/api/show", {{"model", "tiny-base"}}));
        QCOMPARE(b["details"]["family"], json("qwen3"));
        QCOMPARE(b["model_info"]["general.architecture"], json("qwen3"));
        QCOMPARE(b["model_info"]["general.parameter_count"], json(6100000));
        QCOMPARE(b["model_info"]["qwen3.context_length"], json(4096));
        QCOMPARE(b["model_info"]["qwen3.vocab_size"], json(151936));
        // The scripted template writes tools into the prompt and has a thinking switch.
        QCOMPARE(b["capabilities"], json({"completion", "tools", "thinking"}));
        QCOMPARE(b["parameters"], json("num_ctx 4096"));
        QVERIFY(b["modelfile"].get<std::string>().find("FROM /models/tiny-base\n") != std::string::npos);
        QVERIFY(!b["model_info"].contains("adapter.rank"));
        // An alias, the old field name `name`, and Ollama's default tag all resolve.
        for (const json& req :
             {json{{"model", "tiny-base:sql"}}, json{{"name", "sql-lora"}}, json{{"model", "sql-lora:latest"}}}) {
            b = body_of(post("/api/show", req));
            QCOMPARE(b["model_info"]["adapter.name"], json("sql-lora"));
            QCOMPARE(b["model_info"]["adapter.rank"], json(16));
            QCOMPARE(b["model_info"]["adapter.target_modules"], json({"q_proj", "v_proj"}));
            QCOMPARE(b["details"]["parent_model"], json("tiny-base"));
            QVERIFY(b["modelfile"].get<std::string>().find("ADAPTER /adapters/sql-lora\n") != std::string::npos);
        }
        const HttpResponse r = post("/api/show", {{"model", "nope"}});
        QCOMPARE(r.status, 404);
        QVERIFY(error_of(r).find("model \"nope\" not found") == 0);
        QCOMPARE(post("/api/show", json::object()).status, 400);
    }

    void ps_lists_what_is_resident() {
        QVERIFY(m_engine.pin_adapter("sql-lora", true).ok());
        const json b = body_of(get("/api/ps"));
        QCOMPARE(b["models"].size(), std::size_t(2));  // chat-lora is on disk; dora-lora cannot be served
        const json& base = b["models"][0];
        QCOMPARE(base["name"], json("tiny-base"));
        QCOMPARE(base["size"], json(16200000));
        QCOMPARE(base["size_vram"], json(16200000));
        QCOMPARE(base["context_length"], json(4096));
        const json& sql = b["models"][1];
        QCOMPARE(sql["name"], json("tiny-base:sql-lora"));
        QCOMPARE(sql["size_vram"], json(1 << 20));
        QVERIFY(is_rfc3339(sql["expires_at"]));
        QVERIFY(sql["expires_at"].get<std::string>().rfind("23", 0) == 0);  // pinned: ~292 years ahead
        QVERIFY(m_engine.pin_adapter("sql-lora", false).ok());
        QVERIFY(body_of(get("/api/ps"))["models"][1]["expires_at"].get<std::string>().rfind("20", 0) == 0);
    }

    void chat_not_streamed() {
        const HttpResponse r =
            post("/api/chat", {{"model", "tiny-base:sql-lora"}, {"stream", false}, {"messages", user("hi there")}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.content_type, std::string("application/json"));
        const nlohmann::ordered_json b = nlohmann::ordered_json::parse(r.body);
        std::vector<std::string> keys;
        for (const auto& [k, _] : b.items()) keys.push_back(k);
        QCOMPARE(keys, (std::vector<std::string>{"model", "created_at", "message", "done", "done_reason",
                                                 "total_duration", "load_duration", "prompt_eval_count",
                                                 "prompt_eval_duration", "eval_count", "eval_duration"}));
        QCOMPARE(b["model"], "tiny-base:sql-lora");  // as the client wrote it
        QVERIFY(is_rfc3339(b["created_at"]));
        QCOMPARE(b["message"].dump(), std::string(R"({"role":"assistant","content":"Hello, world!"})"));
        QCOMPARE(b["done"], true);
        QCOMPARE(b["done_reason"], "stop");
        QCOMPARE(b["prompt_eval_count"], 2);
        QCOMPARE(b["eval_count"], 4);
        QCOMPARE(b["prompt_eval_duration"], 1000000);  // the engine's ttft_ms (1), in nanoseconds
        QCOMPARE(b["eval_duration"], 1000000);
        QCOMPARE(b["load_duration"], 0);  // the adapter was on the GPU
        QVERIFY(b["total_duration"].get<int64_t>() > 0);
        QCOMPARE(last_request().model, std::string("sql-lora"));
        QCOMPARE(r.header("x-adapter-tier"), std::string("gpu"));
    }

    void chat_streams_ndjson_by_default() {
        HttpResponse r = post("/api/chat", {{"model", "sql"}, {"messages", user("hi")}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.content_type, std::string("application/x-ndjson"));
        const std::vector<json> lines = ndjson(run_stream(r));
        QCOMPARE(lines.size(), std::size_t(5));  // four tokens, then the statistics
        std::string text;
        for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
            QCOMPARE(lines[i]["done"], json(false));
            QCOMPARE(lines[i]["model"], json("sql"));
            QVERIFY(is_rfc3339(lines[i]["created_at"]));
            QCOMPARE(lines[i]["message"]["role"], json("assistant"));
            text += lines[i]["message"]["content"].get<std::string>();
        }
        QCOMPARE(text, std::string("Hello, world!"));
        const json& last = lines.back();
        QCOMPARE(last["done"], json(true));
        QCOMPARE(last["done_reason"], json("stop"));
        QCOMPARE(last["message"]["content"], json(""));
        QCOMPARE(last["eval_count"], json(4));
    }

    void generate_streamed_and_not() {
        HttpResponse r = post("/api/generate", {{"model", "tiny-base"}, {"prompt", "a b c"}, {"system", "Be brief."}});
        QCOMPARE(r.content_type, std::string("application/x-ndjson"));
        const std::vector<json> lines = ndjson(run_stream(r));
        std::string text;
        for (const json& l : lines) text += l["response"].get<std::string>();
        QCOMPARE(text, std::string("Hello, world!"));
        QCOMPARE(lines.back()["done"], json(true));
        QVERIFY(!lines.back().contains("context"));  // loradesk returns no context (see docs/api.md)
        // Not raw: the prompt is one user turn after the system prompt, rendered with the chat template.
        const api::GenerateRequest q = last_request();
        QVERIFY(q.messages.has_value() && !q.prompt);
        QCOMPARE(json::parse(q.messages->dump()),
                 json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"a b c"}])"));
        QCOMPARE(q.model, std::string("tiny-base"));

        r = post("/api/generate", {{"model", "tiny-base:latest"},
                                   {"prompt", "<|im_start|>x"},
                                   {"raw", true},
                                   {"stream", false},
                                   {"options", {{"num_predict", 2}}}});
        QCOMPARE(r.status, 200);
        const json b = body_of(r);
        QCOMPARE(b["response"], json("Hello,"));
        QCOMPARE(b["done_reason"], json("length"));
        QCOMPARE(b["model"], json("tiny-base:latest"));
        QCOMPARE(*last_request().prompt, std::string("<|im_start|>x"));  // raw: as written, no template
        QVERIFY(!last_request().messages);
    }

    void options_map_onto_the_engine_request() {
        const json options = {{"temperature", 0.5},
                              {"top_p", 0.9},
                              {"top_k", 40},
                              {"min_p", 0.05},
                              {"seed", 42},
                              {"repeat_penalty", 1.1},
                              {"presence_penalty", 0.5},
                              {"frequency_penalty", -0.5},
                              {"stop", {"\n\n", "User:"}},
                              {"num_predict", 7},
                              {"num_ctx", 8192},
                              {"num_gpu", 99},
                              {"repeat_last_n", 64},
                              {"mirostat", 0},
                              {"typical_p", 1.0}};
        const HttpResponse r = post(
            "/api/chat", {{"model", "tiny-base"}, {"stream", false}, {"messages", user("x")}, {"options", options}});
        QCOMPARE(r.status, 200);
        const api::GenerateRequest q = last_request();
        QCOMPARE(q.sampling.temperature, 0.5f);
        QCOMPARE(q.sampling.top_p, 0.9f);
        QCOMPARE(q.sampling.top_k, 40);
        QCOMPARE(q.sampling.min_p, 0.05f);
        QCOMPARE(*q.sampling.seed, uint64_t(42));
        QCOMPARE(q.sampling.repetition_penalty, 1.1f);
        QCOMPARE(q.sampling.presence_penalty, 0.5f);
        QCOMPARE(q.sampling.frequency_penalty, -0.5f);
        QCOMPARE(q.stop.stop, (std::vector<std::string>{"\n\n", "User:"}));
        QCOMPARE(q.stop.max_tokens, 7);
    }

    void num_predict_data() {
        QTest::addColumn<int>("num_predict");
        QTest::addColumn<int>("max_tokens");  // 0: refused
        QTest::newRow("-1 until the context is full") << -1 << std::numeric_limits<int32_t>::max();
        QTest::newRow("-2 fill the context") << -2 << std::numeric_limits<int32_t>::max();
        QTest::newRow("1") << 1 << 1;
        QTest::newRow("0") << 0 << 0;
        QTest::newRow("-3") << -3 << 0;
    }
    void num_predict() {
        QFETCH(int, num_predict);
        QFETCH(int, max_tokens);
        const HttpResponse r = post(
            "/api/generate",
            {{"model", "tiny-base"}, {"prompt", "x"}, {"stream", false}, {"options", {{"num_predict", num_predict}}}});
        if (max_tokens == 0) {
            QCOMPARE(r.status, 400);
            QVERIFY(error_of(r).find("'options.num_predict'") == 0);
            return;
        }
        QCOMPARE(r.status, 200);
        QCOMPARE(last_request().stop.max_tokens, max_tokens);
    }

    // Every sampling option goes through the OpenAI path's validation, and the error names the Ollama option.
    void bad_options_data() {
        QTest::addColumn<QByteArray>("options");
        QTest::addColumn<QString>("message");
        QTest::newRow("temperature") << QByteArray(R"({"temperature":3})") << "'options.temperature' must be between";
        QTest::newRow("repeat_penalty") << QByteArray(R"({"repeat_penalty":0})") << "'options.repeat_penalty' must be";
        QTest::newRow("top_p 0") << QByteArray(R"({"top_p":0})") << "'options.top_p' must be greater than 0";
        QTest::newRow("seed 2^64-1") << QByteArray(R"({"seed":18446744073709551615})")
                                     << "'options.seed' is out of range";
        QTest::newRow("top_k string") << QByteArray(R"({"top_k":"40"})") << "'options.top_k' must be an integer";
        QTest::newRow("stop number") << QByteArray(R"({"stop":5})") << "'options.stop' must be a string";
        QTest::newRow("mirostat") << QByteArray(R"({"mirostat":2})") << "'options.mirostat' is not supported";
        QTest::newRow("typical_p") << QByteArray(R"({"typical_p":0.5})") << "'options.typical_p' is not supported";
        QTest::newRow("not an object") << QByteArray(R"([1])") << "'options' must be an object";
    }
    void bad_options() {
        QFETCH(QByteArray, options);
        QFETCH(QString, message);
        const HttpResponse r =
            post("/api/chat",
                 {{"model", "tiny-base"}, {"messages", user("x")}, {"options", json::parse(options.toStdString())}});
        QCOMPARE(r.status, 400);
        QVERIFY2(error_of(r).find(message.toStdString()) == 0, error_of(r).c_str());
    }

    // What loradesk cannot honour is refused with a 400 naming the field, never ignored.
    void refused_fields_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QByteArray>("extra");
        QTest::addColumn<QString>("message");
        QTest::newRow("format text") << "/api/chat" << QByteArray(R"({"format":"yaml"})") << "'format' must be";
        QTest::newRow("format keyword") << "/api/generate"
                                        << QByteArray(R"({"format":{"type":"object","patternProperties":{}}})")
                                        << "unsupported JSON Schema keyword 'patternProperties'";
        QTest::newRow("template") << "/api/generate" << QByteArray(R"({"template":"{{ .Prompt }}"})")
                                  << "'template' is not supported";
        QTest::newRow("images") << "/api/generate" << QByteArray(R"({"images":["iVBOR"]})") << "'images' are not";
        QTest::newRow("message images") << "/api/chat"
                                        << QByteArray(R"({"messages":[{"role":"user","content":"x","images":["a"]}]})")
                                        << "messages[0].images";
        QTest::newRow("suffix") << "/api/generate" << QByteArray(R"({"suffix":"return x"})") << "'suffix'";
        QTest::newRow("context") << "/api/generate" << QByteArray(R"({"context":[1,2,3]})") << "'context'";
        QTest::newRow("think level") << "/api/chat" << QByteArray(R"({"think":"max"})") << "'think' must be";
        QTest::newRow("raw with system") << "/api/generate" << QByteArray(R"({"raw":true,"system":"s"})")
                                         << "'system' has no effect";
        QTest::newRow("keep_alive word") << "/api/chat" << QByteArray(R"({"keep_alive":"soon"})")
                                         << "'keep_alive' must be a duration";
        QTest::newRow("bad role") << "/api/chat" << QByteArray(R"({"messages":[{"role":"robot","content":"x"}]})")
                                  << "messages[0].role 'robot'";
        QTest::newRow("no model") << "/api/chat" << QByteArray(R"({"model":null})") << "'model' is required";
    }
    void refused_fields() {
        QFETCH(QString, path);
        QFETCH(QByteArray, extra);
        QFETCH(QString, message);
        json body = {{"model", "tiny-base"}, {"stream", false}};
        body[path == "/api/chat" ? "messages" : "prompt"] = path == "/api/chat" ? user("x") : json("x");
        body.update(json::parse(extra.toStdString()));
        const std::size_t before = m_engine.requests().size();
        const HttpResponse r = post(path.toStdString(), body);
        QCOMPARE(r.status, 400);
        QVERIFY2(error_of(r).find(message.toStdString()) != std::string::npos, error_of(r).c_str());
        QCOMPARE(m_engine.requests().size(), before);
        // The empty forms clients send by default are accepted.
        QCOMPARE(post("/api/generate", {{"model", "tiny-base"},
                                        {"prompt", "x"},
                                        {"stream", false},
                                        {"format", ""},
                                        {"images", json::array()},
                                        {"context", json::array()},
                                        {"template", ""}})
                     .status,
                 200);
    }

    void think_maps_onto_the_template_switch() {
        HttpResponse r = post(
            "/api/chat", {{"model", "tiny-base"}, {"stream", false}, {"think", true}, {"messages", user("#think")}});
        QCOMPARE(r.status, 200);
        QCOMPARE(last_request().chat_template_kwargs.dump(), std::string(R"({"enable_thinking":true})"));
        QCOMPARE(body_of(r)["message"],
                 json({{"role", "assistant"}, {"content", "Answer."}, {"thinking", "Pondering."}}));
        r = post("/api/generate", {{"model", "tiny-base"}, {"stream", false}, {"think", "low"}, {"prompt", "#think"}});
        QCOMPARE(last_request().chat_template_kwargs.dump(),
                 std::string(R"({"enable_thinking":true,"reasoning_effort":"low"})"));
        QCOMPARE(body_of(r)["thinking"], json("Pondering."));
        QCOMPARE(body_of(r)["response"], json("Answer."));
        post("/api/chat", {{"model", "tiny-base"}, {"stream", false}, {"think", false}, {"messages", user("x")}});
        QCOMPARE(last_request().chat_template_kwargs.dump(), std::string(R"({"enable_thinking":false})"));
    }

    void tool_calls_have_object_arguments() {
        const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather",
            "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
        HttpResponse r = post(
            "/api/chat", {{"model", "tiny-base"}, {"stream", false}, {"tools", tools}, {"messages", user("#tool")}});
        QCOMPARE(r.status, 200);
        QCOMPARE(last_request().tools.size(), std::size_t(1));  // handed to the template
        const json msg = body_of(r)["message"];
        QCOMPARE(msg["content"], json("Let me check.\n"));
        const json expected =
            json::parse(R"([{"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}])");
        QCOMPARE(msg["tool_calls"], expected);
        QCOMPARE(body_of(r)["done_reason"], json("stop"));

        r = post("/api/chat", {{"model", "tiny-base"}, {"tools", tools}, {"messages", user("#tool")}});
        json streamed = json::array();
        for (const json& l : ndjson(run_stream(r)))
            if (l["message"].contains("tool_calls")) streamed.push_back(l["message"]["tool_calls"][0]);
        QCOMPARE(streamed, expected);

        // A history with the assistant's tool call (arguments as an object) and the tool's answer is accepted.
        const json history = json::parse(R"([{"role":"user","content":"weather?"},
            {"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
            {"role":"tool","content":"sunny","tool_name":"get_weather"}])");
        QCOMPARE(post("/api/chat", {{"model", "tiny-base"}, {"stream", false}, {"messages", history}}).status, 200);
    }

    void logprobs() {
        const HttpResponse r = post("/api/chat", {{"model", "tiny-base"},
                                                  {"stream", false},
                                                  {"logprobs", true},
                                                  {"top_logprobs", 2},
                                                  {"messages", user("x")}});
        QCOMPARE(r.status, 200);
        QCOMPARE(last_request().logprobs, 2);
        const json lp = body_of(r)["logprobs"];
        QCOMPARE(lp.size(), std::size_t(4));
        QCOMPARE(lp[0]["token"], json("Hello"));
        QCOMPARE(lp[0]["top_logprobs"].size(), std::size_t(2));
        QCOMPARE(post("/api/chat", {{"model", "tiny-base"}, {"top_logprobs", 2}, {"messages", user("x")}}).status, 400);
    }

    void keep_alive_pins_and_unpins_adapters() {
        const auto pinned = [&] { return m_engine.adapter("sql-lora").value().pinned; };
        const auto chat = [&](const json& keep_alive) {
            return post("/api/chat",
                        {{"model", "sql-lora"}, {"stream", false}, {"keep_alive", keep_alive}, {"messages", user("x")}})
                .status;
        };
        QCOMPARE(chat(-1), 200);
        QVERIFY(pinned());
        QCOMPARE(chat("5m"), 200);  // every client's default: leaves the pin alone
        QVERIFY(pinned());
        QCOMPARE(chat("-1m"), 200);
        QVERIFY(pinned());
        QCOMPARE(chat(0), 200);
        QVERIFY(!pinned());
        QCOMPARE(chat("1h30m"), 200);
        QVERIFY(!pinned());
        QCOMPARE(chat("300"), 200);  // seconds in a string
        QCOMPARE(chat(300.5), 200);
    }

    // An empty prompt (or no messages) with only a model is Ollama's load call; with keep_alive 0, its unload.
    void load_and_unload_calls() {
        const std::size_t before = m_engine.requests().size();
        HttpResponse r = post("/api/generate", {{"model", "sql-lora"}});
        QCOMPARE(r.status, 200);
        json b = body_of(r);
        QCOMPARE(b["done"], json(true));
        QCOMPARE(b["done_reason"], json("load"));
        QCOMPARE(b["response"], json(""));
        r = post("/api/chat", {{"model", "sql-lora"}, {"messages", json::array()}, {"keep_alive", -1}});
        QCOMPARE(body_of(r)["message"], json({{"role", "assistant"}, {"content", ""}}));
        QVERIFY(m_engine.adapter("sql-lora").value().pinned);
        r = post("/api/generate", {{"model", "sql-lora"}, {"prompt", ""}, {"keep_alive", 0}});
        QCOMPARE(body_of(r)["done_reason"], json("unload"));
        QVERIFY(!m_engine.adapter("sql-lora").value().pinned);
        r = post("/api/generate", {{"model", "tiny-base"}, {"keep_alive", 0}});
        QCOMPARE(body_of(r)["done_reason"], json("load"));  // the base model stays loaded
        QCOMPARE(m_engine.requests().size(), before);
        QCOMPARE(post("/api/generate", {{"model", "nope"}}).status, 404);
    }

    void unknown_and_unservable_models_are_404() {
        HttpResponse r = post("/api/chat", {{"model", "nope"}, {"messages", user("x")}});
        QCOMPARE(r.status, 404);
        const std::string e = error_of(r);
        QVERIFY2(e.find("model \"nope\" not found") == 0, e.c_str());
        QVERIFY(e.find("POST /v1/load_lora_adapter") != std::string::npos);
        QCOMPARE(body_of(r).size(), std::size_t(1));  // only "error", as Ollama
        r = post("/api/generate", {{"model", "other-base:sql-lora"}, {"prompt", "x"}});
        QCOMPARE(r.status, 404);
        r = post("/api/generate", {{"model", "tiny-base:dora-lora"}, {"prompt", "x"}});
        QCOMPARE(r.status, 404);
        QVERIFY(error_of(r).find("DoRA") != std::string::npos);
    }

    void errors_before_and_during_a_stream() {
        HttpResponse r = post("/api/chat", {{"model", "tiny-base"}, {"messages", user("#busy")}});
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("Retry-After"), std::string("1"));
        QVERIFY(error_of(r).find("queue is full") != std::string::npos);
        r = post("/api/generate", {{"model", "tiny-base"}, {"prompt", "#fail"}});
        QCOMPARE(r.status, 200);
        const std::vector<json> lines = ndjson(run_stream(r));
        QCOMPARE(lines.size(), std::size_t(3));
        QCOMPARE(lines.back(), json({{"error", "CUDA error: out of memory"}}));
        r = post("/api/generate", {{"model", "tiny-base"}, {"prompt", "#fail"}, {"stream", false}});
        QCOMPARE(r.status, 500);
        QCOMPARE(error_of(r), std::string("CUDA error: out of memory"));
        r = post("/api/chat", {{"model", "tiny-base"}, {"messages", user("#engine-cancel")}});
        QVERIFY(ndjson(run_stream(r)).back().contains("error"));
    }

    void client_gone_cancels_the_request() {
        int cancelled = m_engine.cancelled();
        HttpResponse r = post("/api/chat", {{"model", "tiny-base"}, {"messages", user("#long #slow")}});
        run_stream(r, 2);  // the third write fails
        QCOMPARE(m_engine.cancelled(), cancelled + 1);
        // Silence (no token yet) while the connection is closed: noticed from the socket, not from a write.
        for (bool stream : {true, false}) {
            cancelled = m_engine.cancelled();
            HttpRequest q =
                post_json("/api/generate", {{"model", "tiny-base"}, {"prompt", "#stall"}, {"stream", stream}});
            q.client_gone = [] { return true; };
            r = m_router.handle(q);
            const std::string body = run_stream(r);
            QVERIFY(body.empty());
            QCOMPARE(m_engine.cancelled(), cancelled + 1);
        }
        QTRY_COMPARE(m_engine.live_streams(), 0);
    }

    void model_management_is_refused_with_what_to_do_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("hint");
        QTest::newRow("pull") << "POST"
                              << "/api/pull"
                              << "/v1/load_lora_adapter";
        QTest::newRow("push") << "POST"
                              << "/api/push"
                              << "does not upload";
        QTest::newRow("create") << "POST"
                                << "/api/create"
                                << "/v1/load_lora_adapter";
        QTest::newRow("blobs") << "POST"
                               << "/api/blobs/sha256:00"
                               << "Modelfiles or blobs";
        QTest::newRow("copy") << "POST"
                              << "/api/copy"
                              << "NEW_NAME";
        QTest::newRow("delete") << "DELETE"
                                << "/api/delete"
                                << "/v1/unload_lora_adapter";
        QTest::newRow("embed") << "POST"
                               << "/api/embed"
                               << "no embeddings";
        QTest::newRow("embeddings") << "POST"
                                    << "/api/embeddings"
                                    << "no embeddings";
    }
    void model_management_is_refused_with_what_to_do() {
        QFETCH(QString, method);
        QFETCH(QString, path);
        QFETCH(QString, hint);
        const HttpResponse r =
            m_router.handle(make_request(method.toStdString(), path.toStdString(), R"({"model":"x"})"));
        QCOMPARE(r.status, 501);
        QVERIFY2(error_of(r).find(hint.toStdString()) != std::string::npos, error_of(r).c_str());
    }

    void router_errors_are_ollama_shaped() {
        HttpResponse r = get("/api/nope");
        QCOMPARE(r.status, 404);
        QVERIFY(error_of(r).find("no Ollama route") == 0);
        r = get("/api/chat");
        QCOMPARE(r.status, 405);
        QCOMPARE(error_of(r), std::string("GET is not allowed on /api/chat"));
        r = m_router.handle(make_request("POST", "/api/chat", "{not json"));
        QCOMPARE(r.status, 400);
        QVERIFY(error_of(r).find("not valid JSON") != std::string::npos);
        ServerOptions keyed;
        keyed.api_key = "secret";
        Router router(m_engine, keyed);
        r = router.handle(make_request("GET", "/api/tags"));
        QCOMPARE(r.status, 401);
        QVERIFY(error_of(r).find("API key") != std::string::npos);
        QCOMPARE(router.handle(make_request("GET", "/api/tags", "", {{"Authorization", "Bearer secret"}})).status, 200);
        m_router.set_unavailable("Loading model");
        QCOMPARE(post("/api/chat", {{"model", "tiny-base"}, {"messages", user("x")}}).status, 503);
        QCOMPARE(get("/api/tags").status, 200);
        m_router.set_available();
        // The OpenAI routes keep OpenAI's shape.
        QVERIFY(body_of(get("/v1/nope"))["error"].is_object());
    }

    void requests_are_counted_by_endpoint() {
        post("/api/chat", {{"model", "sql-lora"}, {"stream", false}, {"messages", user("x")}});
        const std::string text = get("/metrics").body;
        QVERIFY(text.find(R"(adapter="sql-lora",endpoint="ollama_chat",code="200")") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TstOllamaRoutes)
#include "tst_ollama_routes.moc"
