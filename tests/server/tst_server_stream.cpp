// engine/server SSE streaming without sockets: byte-exact chunk framing (role, deltas, finish, usage, [DONE]),
// usage:null only with include_usage, keep-alive comments, error after headers, cancellation when the client
// goes away, n > 1, tool calls and reasoning as deltas.
#include <QtTest>

#include "scripted_engine.h"
#include "server/router.h"
#include "server_test_util.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;
using nlohmann::json;

namespace {

json chat_request(const std::string& text, json extra = json::object()) {
    json body = {{"model", "sql-lora"}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", text}}}}};
    body.update(extra);
    return body;
}

// Replaces the response id and created time so whole bodies can be compared byte for byte.
std::string normalized(std::string body, const std::string& id, int64_t created) {
    for (auto [from, to] : {std::pair{id, std::string("ID")}, {std::to_string(created), std::string("T")}}) {
        for (std::size_t p = body.find(from); p != std::string::npos; p = body.find(from, p + to.size()))
            body.replace(p, from.size(), to);
    }
    return body;
}

std::string normalize_stream(const std::string& body) {
    const json first = json::parse(sse_events(body).at(0));
    return normalized(body, first["id"], first["created"]);
}

}  // namespace

class TstServerStream : public QObject {
    Q_OBJECT
    ScriptedEngine m_engine;
    ServerOptions m_options;
    std::unique_ptr<Router> m_router;

  private slots:
    void init() {
        m_options.keep_alive_ms = 100;
        m_router = std::make_unique<Router>(m_engine, m_options);
    }

    void chat_stream_exact_bytes_with_usage() {
        HttpResponse r = m_router->handle(
            post_json("/v1/chat/completions", chat_request("hi", {{"stream_options", {{"include_usage", true}}}})));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.content_type, std::string("text/event-stream"));
        QCOMPARE(r.header("Cache-Control"), std::string("no-cache"));
        QCOMPARE(r.header("x-adapter-tier"), std::string("gpu"));
        const std::string h =
            R"(data: {"id":"ID","object":"chat.completion.chunk","created":T,"model":"sql-lora","choices":[{"index":0,"delta":)";
        const std::string expected =
            h +
            R"({"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"({"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"({"content":","},"logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"({"content":" world"},"logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"({"content":"!"},"logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"({},"logprobs":null,"finish_reason":"stop"}],"usage":null})"
            "\n\n"
            R"(data: {"id":"ID","object":"chat.completion.chunk","created":T,"model":"sql-lora","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":4,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":0}}})"
            "\n\n"
            "data: [DONE]\n\n";
        QCOMPARE(normalize_stream(run_stream(r)), expected);
    }
    void no_usage_keys_without_include_usage() {
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("hi")));
        const std::vector<std::string> events = sse_events(run_stream(r));
        QCOMPARE(events.size(), std::size_t(7));  // role, 4 deltas, finish, [DONE]
        for (std::size_t i = 0; i + 1 < events.size(); ++i) QVERIFY(!json::parse(events[i]).contains("usage"));
        QCOMPARE(events.back(), std::string("[DONE]"));
    }
    void completions_stream() {
        HttpResponse r = m_router->handle(post_json(
            "/v1/completions",
            {{"prompt", "x"}, {"stream", true}, {"max_tokens", 2}, {"stream_options", {{"include_usage", true}}}}));
        const std::string h =
            R"(data: {"id":"ID","object":"text_completion","created":T,"model":"tiny-base","choices":[{"index":0,"text":)";
        const std::string expected =
            h +
            R"("Hello","logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"(",","logprobs":null,"finish_reason":null}],"usage":null})"
            "\n\n" +
            h +
            R"("","logprobs":null,"finish_reason":"length"}],"usage":null})"
            "\n\n"
            R"(data: {"id":"ID","object":"text_completion","created":T,"model":"tiny-base","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}})"
            "\n\n"
            "data: [DONE]\n\n";
        QCOMPARE(normalize_stream(run_stream(r)), expected);
    }
    // echo + logprobs streamed: the echo chunk, then the scored prompt in a chunk of its own (empty text, with
    // vLLM's prompt_logprobs when asked), then the completion's chunks.
    void completions_stream_scored_prompt() {
        HttpResponse r = m_router->handle(post_json("/v1/completions", {{"prompt", "a b"},
                                                                        {"stream", true},
                                                                        {"max_tokens", 1},
                                                                        {"echo", true},
                                                                        {"logprobs", 0},
                                                                        {"prompt_logprobs", 0}}));
        const std::string h =
            R"(data: {"id":"ID","object":"text_completion","created":T,"model":"tiny-base","choices":[{"index":0,"text":)";
        const std::string expected =
            h +
            R"("a b","logprobs":null,"finish_reason":null}]})"
            "\n\n" +
            h +
            R"("","logprobs":{"tokens":["a"," b"],"token_logprobs":[null,-0.5],"top_logprobs":[null,null],"text_offset":[0,1]},)"
            R"("finish_reason":null,"prompt_logprobs":[null,{"11":{"logprob":-0.5,"rank":1,"decoded_token":" b"}}]}]})"
            "\n\n" +
            h +
            R"("Hello","logprobs":{"tokens":["Hello"],"token_logprobs":[-0.25],"top_logprobs":[null],"text_offset":[3]},"finish_reason":null}]})"
            "\n\n" +
            h +
            R"("","logprobs":null,"finish_reason":"length"}]})"
            "\n\n"
            "data: [DONE]\n\n";
        QCOMPARE(QString::fromStdString(normalize_stream(run_stream(r))), QString::fromStdString(expected));
    }
    void keep_alive_while_waiting() {
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("#stall")));
        const std::vector<std::string> events = sse_events(run_stream(r));
        // 400 ms before the first token with a 100 ms keep-alive interval: at least two comments, never ": ping".
        int comments = 0;
        for (const std::string& e : events) {
            if (e[0] == ':') {
                QCOMPARE(e, std::string(": keep-alive"));
                ++comments;
            }
        }
        QVERIFY2(comments >= 2, qPrintable(QString::number(comments)));
        QCOMPARE(events[0].substr(0, 6), std::string("{\"id\":"));
        QCOMPARE(events.back(), std::string("[DONE]"));
    }
    void error_after_headers() {
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("#fail")));
        QCOMPARE(r.status, 200);
        const std::vector<std::string> events = sse_events(run_stream(r));
        QCOMPARE(events.size(), std::size_t(5));  // role, 2 deltas, error, [DONE]
        const std::string error =
            R"({"error":{"message":"CUDA error: out of memory","type":"server_error","param":null,"code":500}})";
        QCOMPARE(events[3], error);
        QCOMPARE(events[4], std::string("[DONE]"));
    }
    void client_disconnect_cancels_at_once() {
        m_engine.set_token_delay_ms(20);
        const int before = m_engine.cancelled();
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("#long", {{"n", 3}})));
        QElapsedTimer timer;
        timer.start();
        const std::string got = run_stream(r, 5);  // 3 role chunks, 2 deltas, then the client is gone
        m_engine.set_token_delay_ms(0);
        QVERIFY2(timer.elapsed() < 500, "the producer kept running after the client left");
        QCOMPARE(sse_events(got).size(), std::size_t(5));
        QCOMPARE(m_engine.cancelled() - before, 3);  // every choice's engine request
        QTRY_COMPARE(m_engine.live_streams(), 0);
        const std::string metrics = m_router->metrics().render(m_engine);
        const std::string line = R"(loradesk_requests_total{adapter="sql-lora",endpoint="chat",code="499"} 1)";
        QVERIFY(metrics.find(line) != std::string::npos);
    }
    void unconsumed_stream_cancels_engine_requests() {
        const int before = m_engine.cancelled();
        {
            HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("hi")));
            QCOMPARE(m_engine.live_streams(), 1);
        }
        QCOMPARE(m_engine.cancelled() - before, 1);
    }
    void n_choices_each_get_role_and_finish() {
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("hi", {{"n", 2}})));
        std::map<int, std::string> text;
        std::map<int, int> roles, finishes;
        for (const std::string& e : sse_events(run_stream(r))) {
            if (e == "[DONE]") continue;
            const json c = json::parse(e)["choices"][0];
            const int i = c["index"];
            if (c["delta"].contains("role")) ++roles[i];
            if (c["delta"].contains("content")) text[i] += c["delta"]["content"].get<std::string>();
            if (!c["finish_reason"].is_null()) ++finishes[i];
        }
        QCOMPARE(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
        QCOMPARE(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
        QCOMPARE(text[0], std::string("Hello, world!"));
        QCOMPARE(text[1], std::string("Hello, world!"));
    }
    void tool_calls_and_reasoning_stream_as_deltas() {
        json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}};
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("#tool", {{"tools", tools}})));
        std::string content, finish;
        json calls = json::array();
        for (const std::string& e : sse_events(run_stream(r))) {
            if (e == "[DONE]") continue;
            const json c = json::parse(e)["choices"][0];
            QVERIFY2(!c["delta"].contains("content") ||
                         c["delta"]["content"].get<std::string>().find('<') == std::string::npos,
                     e.c_str());
            if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
            if (c["delta"].contains("tool_calls"))
                calls.insert(calls.end(), c["delta"]["tool_calls"].begin(), c["delta"]["tool_calls"].end());
            if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
        }
        QCOMPARE(finish, std::string("tool_calls"));
        QCOMPARE(calls.size(), std::size_t(1));
        QCOMPARE(calls[0]["index"], json(0));
        QCOMPARE(calls[0]["function"]["name"], json("get_weather"));
        const json arguments = R"({"city":"Paris"})";
        QCOMPARE(calls[0]["function"]["arguments"], arguments);
        QCOMPARE(content, std::string("Let me check.\n"));

        r = m_router->handle(post_json("/v1/chat/completions", chat_request("#think")));
        std::string reasoning;
        content.clear();
        for (const std::string& e : sse_events(run_stream(r))) {
            if (e == "[DONE]") continue;
            const json d = json::parse(e)["choices"][0]["delta"];
            if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
            if (d.contains("content")) content += d["content"].get<std::string>();
        }
        QCOMPARE(reasoning, std::string("Pondering."));
        QCOMPARE(content, std::string("Answer."));
    }
    void logprobs_in_chunks() {
        HttpResponse r = m_router->handle(
            post_json("/v1/chat/completions", chat_request("hi", {{"logprobs", true}, {"max_tokens", 1}})));
        const std::vector<std::string> events = sse_events(run_stream(r));
        const json lp = json::parse(events[1])["choices"][0]["logprobs"];
        QCOMPARE(lp["content"][0]["token"], json("Hello"));
        QCOMPARE(lp["content"][0]["top_logprobs"], json::array());
    }
    void utf8_text_survives() {
        HttpResponse r = m_router->handle(post_json("/v1/chat/completions", chat_request("#utf8")));
        std::string content;
        for (const std::string& e : sse_events(run_stream(r)))
            if (e != "[DONE]") content += json::parse(e)["choices"][0]["delta"].value("content", "");
        QCOMPARE(content, std::string("caf\xc3\xa9 \xe2\x9c\x93"));
    }
};

QTEST_GUILESS_MAIN(TstServerStream)
#include "tst_server_stream.moc"
