// End to end through the OpenAI chat route (and Ollama's) on the scripted engine: the parser follows the
// chat template the engine reports (or --tool-call-parser), tool requests whose markers are special tokens
// are detokenized with skip_special_tokens=false, calls come back whole (non-streamed) and as deltas
// (streamed), and a template that opens <think> in the prompt makes the reply start inside the reasoning.
#include <QtTest>

#include "scripted_engine.h"
#include "server/router.h"
#include "server_test_util.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;
using nlohmann::json;

namespace {

const char* kMistralV11Template = R"({%- for m in messages %}[INST]{{ m.content }}[/INST]{%- endfor %})"
                                  R"({#- [TOOL_CALLS]name[ARGS]{...} -#})";
const char* kLlamaTemplate = R"(<|start_header_id|>user<|end_header_id|>{{ messages[0].content }})"
                             R"({#- {"name": function name, "parameters": ...} <|python_tag|> -#})";
const char* kThinkingTemplate = "{#- <think> opened in the generation prompt, <tool_call> -#}";

json tools() {
    return json::parse(std::string(R"([{"type":"function","function":{"name":"get_weather","parameters":)") +
                       R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}}])");
}

json request(bool stream) {
    return {{"model", "tiny-base"},
            {"messages", {{{"role", "user"}, {"content", "weather? #scripted"}}}},
            {"tools", tools()},
            {"stream", stream}};
}

struct Streamed {
    std::string reasoning, content, finish;
    json calls = json::array();
};

Streamed stream_of(Router& router, const json& req) {
    HttpResponse r = router.handle(post_json("/v1/chat/completions", req));
    Streamed out;
    for (const std::string& e : sse_events(run_stream(r))) {
        if (e == "[DONE]") continue;
        const json c = json::parse(e)["choices"][0];
        const json& d = c["delta"];
        if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"].get<std::string>();
        if (d.contains("content") && d["content"].is_string()) out.content += d["content"].get<std::string>();
        if (d.contains("tool_calls")) out.calls.insert(out.calls.end(), d["tool_calls"].begin(), d["tool_calls"].end());
        if (!c["finish_reason"].is_null()) out.finish = c["finish_reason"];
    }
    return out;
}

}  // namespace

class TstToolCallRoutes : public QObject {
    Q_OBJECT

  private slots:
    void mistral_v11_from_the_template() {
        ScriptedEngine engine;
        engine.set_chat_template(kMistralV11Template);
        engine.set_scripted_reply(
            {"Sure.", "[TOOL_CALLS]", "get_weather", "[ARGS]", "{\"city\": \"Par", "is\", \"days\": 2}"});
        Router router(engine, ServerOptions{});
        QCOMPARE(router.options().tool_call_format, ToolCallFormat::mistral_v11);
        const json b = json::parse(router.handle(post_json("/v1/chat/completions", request(false))).body);
        QVERIFY(!engine.requests().back().skip_special_tokens);  // [TOOL_CALLS] is a special token
        const json msg = b["choices"][0]["message"];
        QCOMPARE(b["choices"][0]["finish_reason"], json("tool_calls"));
        QCOMPARE(msg["content"], json("Sure."));
        QCOMPARE(msg["tool_calls"][0]["function"]["name"], json("get_weather"));
        QCOMPARE(msg["tool_calls"][0]["function"]["arguments"], json(R"({"city":"Paris","days":2})"));
        QCOMPARE(msg["tool_calls"][0]["id"].get<std::string>().size(), std::size_t(9));
        const Streamed s = stream_of(router, request(true));
        QCOMPARE(s.finish, std::string("tool_calls"));
        QCOMPARE(s.content, std::string("Sure."));
        QCOMPARE(s.calls.size(), std::size_t(1));
        QCOMPARE(s.calls[0]["index"], json(0));
        QCOMPARE(s.calls[0]["type"], json("function"));
        QCOMPARE(s.calls[0]["function"]["arguments"], json(R"({"city":"Paris","days":2})"));
        // Without tools the markers stay special (skipped) and nothing is parsed.
        json plain = request(false);
        plain.erase("tools");
        router.handle(post_json("/v1/chat/completions", plain));
        QVERIFY(engine.requests().back().skip_special_tokens);
    }
    void llama3_json_from_the_template() {
        ScriptedEngine engine;
        engine.set_chat_template(kLlamaTemplate);
        engine.set_scripted_reply(
            {"<|python_tag|>", "{\"name\": \"get_weather\", ", "\"parameters\": {\"city\": \"Paris\"}}"});
        Router router(engine, ServerOptions{});
        QCOMPARE(router.options().tool_call_format, ToolCallFormat::llama3_json);
        const Streamed s = stream_of(router, request(true));
        QVERIFY(!engine.requests().back().skip_special_tokens);
        QCOMPARE(s.finish, std::string("tool_calls"));
        QCOMPARE(s.content, std::string());
        QCOMPARE(s.calls.size(), std::size_t(1));
        QCOMPARE(s.calls[0]["function"]["arguments"], json(R"({"city":"Paris"})"));
        QVERIFY(s.calls[0]["id"].get<std::string>().rfind("call_", 0) == 0);
    }
    void the_parser_option_overrides_the_template() {
        ScriptedEngine engine;
        engine.set_chat_template(kThinkingTemplate);  // would be hermes
        engine.set_scripted_reply({"</think>\n\n", "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n",
                                   "</parameter>\n</function>\n</tool_call>"});
        ServerOptions o;
        o.tool_call_parser = "qwen3_coder";
        Router router(engine, o);
        QCOMPARE(router.options().tool_call_format, ToolCallFormat::qwen3_coder);
        const json b = json::parse(router.handle(post_json("/v1/chat/completions", request(false))).body);
        QVERIFY(engine.requests().back().skip_special_tokens);  // <tool_call> is not a special token
        QCOMPARE(b["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], json(R"({"days":3})"));
        QCOMPARE(b["choices"][0]["message"]["content"], json(nullptr));
        ServerOptions bad;
        bad.tool_call_parser = "pythonic";  // the CLI refuses it; a Router given it reads the template
        QCOMPARE(Router(engine, bad).options().tool_call_format, ToolCallFormat::hermes);
    }
    void reasoning_starts_inside_a_template_opened_think() {
        ScriptedEngine engine;
        engine.set_chat_template(kThinkingTemplate);
        engine.set_scripted_reply({"The user wants", " weather.\n</th", "ink>\n\nIt is sunny."});
        Router router(engine, ServerOptions{});
        json req = request(false);
        req.erase("tools");
        json b = json::parse(router.handle(post_json("/v1/chat/completions", req)).body);
        QCOMPARE(b["choices"][0]["message"]["reasoning_content"], json("The user wants weather."));
        QCOMPARE(b["choices"][0]["message"]["content"], json("It is sunny."));
        req["stream"] = true;
        const Streamed s = stream_of(router, req);
        QCOMPARE(s.reasoning, std::string("The user wants weather.\n"));
        QCOMPARE(s.content, std::string("It is sunny."));
        // enable_thinking=false: the prompt closes the block, the reply is content.
        engine.set_scripted_reply({"It is sunny."});
        req["stream"] = false;
        req["chat_template_kwargs"] = {{"enable_thinking", false}};
        b = json::parse(router.handle(post_json("/v1/chat/completions", req)).body);
        QVERIFY(!b["choices"][0]["message"].contains("reasoning_content"));
        QCOMPARE(b["choices"][0]["message"]["content"], json("It is sunny."));
    }
    void no_reasoning_format_keeps_think_as_content() {
        ScriptedEngine engine;
        engine.set_chat_template(kMistralV11Template);
        engine.set_scripted_reply({"<think>x</think>", "y"});
        Router router(engine, ServerOptions{});
        json req = request(false);
        req.erase("tools");
        const json b = json::parse(router.handle(post_json("/v1/chat/completions", req)).body);
        QVERIFY(!b["choices"][0]["message"].contains("reasoning_content"));
        QCOMPARE(b["choices"][0]["message"]["content"], json("<think>x</think>y"));
    }
    void ollama_chat_uses_the_same_parser() {
        ScriptedEngine engine;
        engine.set_chat_template(kMistralV11Template);
        engine.set_scripted_reply({"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"});
        Router router(engine, ServerOptions{});
        const json req = {{"model", "tiny-base"},
                          {"stream", false},
                          {"messages", {{{"role", "user"}, {"content", "weather? #scripted"}}}},
                          {"tools", tools()}};
        const json b = json::parse(router.handle(post_json("/api/chat", req)).body);
        QCOMPARE(b["message"]["tool_calls"][0]["function"]["name"], json("get_weather"));
        QCOMPARE(b["message"]["tool_calls"][0]["function"]["arguments"], json({{"city", "Paris"}}));
    }
};

QTEST_GUILESS_MAIN(TstToolCallRoutes)
#include "tst_tool_call_routes.moc"
