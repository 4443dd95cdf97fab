// How the reply parsers are chosen: the tool-call format detected from each family's chat template (and the
// --tool-call-parser names), the call syntax handed to grammars (checked against the parser: a call written
// from the syntax parses back), and reasoning decided from the rendered prompt's tail with the real Qwen3
// template (tests/server/data/qwen3_chat_template.jinja), its thinking-release variant, and a template
// without <think>; then the reasoning splitter in each case, for every chunking of chunked_feed.h.
#include <QtTest>
#include <fstream>
#include <sstream>

#include "chunked_feed.h"
#include "server/reasoning_splitter.h"
#include "server/tool_call_format.h"
#include "server/tool_call_parser.h"
#include "server/tool_call_syntax.h"
#include "source_file.h"
#include "tokenizer/jinja/chat_template.h"

using namespace loradesk;
using namespace loradesk::server;
using ojson = nlohmann::ordered_json;
using test::read_file;
using test::source;

namespace {

// Qwen3 thinking releases (Qwen3-*-Thinking-2507) open the block in the generation prompt; otherwise their
// template is the hybrid one.
std::string qwen3_thinking_template() {
    std::string t = source("tests/server/data/qwen3_chat_template.jinja");
    const std::string gen = "{{- '<|im_start|>assistant\\n' }}";
    const auto at = t.find(gen);
    if (at != std::string::npos) t.replace(at, gen.size(), "{{- '<|im_start|>assistant\\n<think>\\n' }}");
    return t;
}

std::string prompt_tail(const std::string& tmpl, const ojson& kwargs) {
    const jinja::ChatTemplate t = jinja::ChatTemplate::from_config(nlohmann::json::object(), tmpl);
    const ojson messages = ojson::array({{{"role", "user"}, {"content", "hi"}}});
    const std::string text = t.render(messages, nullptr, true, kwargs);
    return text.substr(text.size() - std::min<std::size_t>(text.size(), 64));
}

ReasoningDelta split(ReasoningMode mode, const std::vector<std::string>& pieces) {
    ReasoningSplitter s(mode);
    ReasoningDelta out;
    for (const std::string& p : pieces) s.feed(p, out);
    s.finish(out);
    return out;
}

// Excerpts of the published templates' tool-call turns: Mistral v0.3 (pre-v11), a v11+ (tekken) template,
// Qwen3-Coder and Llama 3.1's built-in tool line.
const char* kMistralV3 =
    R"({%- if message.tool_calls is defined %}{{- "[TOOL_CALLS] [" }}{%- for tool_call in message.tool_calls %}{{- '{"name": "' + tool_call.function.name + '", "arguments": ' }}{%- endfor %}{%- endif %})";
const char* kMistralV11 =
    R"({%- for tool in message.tool_calls %}{{- "[TOOL_CALLS]" + tool.function.name + "[ARGS]" + tool.function.arguments|tojson }}{%- endfor %})";
const char* kQwen3Coder =
    R"({{- '<tool_call>\n<function=' + tool_call.name + '>\n' }}{%- for args_name, args_value in tool_call.arguments|items %}{{- '<parameter=' + args_name + '>\n' }}{%- endfor %})";
const char* kLlamaBuiltin =
    R"({%- if builtin_tools is defined %}{{- "<|python_tag|>" + tool_call.name + ".call(" }}{%- endif %})";

}  // namespace

class TstChatFormatChoice : public QObject {
    Q_OBJECT

  private slots:
    void detects_the_format_from_the_template_data() {
        QTest::addColumn<QByteArray>("tmpl");
        QTest::addColumn<int>("format");
        QTest::newRow("qwen3") << QByteArray::fromStdString(source("tests/server/data/qwen3_chat_template.jinja"))
                               << int(ToolCallFormat::hermes);
        QTest::newRow("llama 3.1 tools") << QByteArray::fromStdString(
                                                source("tests/chat_template/data/llama31_tools_style.jinja"))
                                         << int(ToolCallFormat::llama3_json);
        QTest::newRow("llama 3.1 built-in") << QByteArray(kLlamaBuiltin) << int(ToolCallFormat::llama3_json);
        QTest::newRow("mistral v0.3") << QByteArray(kMistralV3) << int(ToolCallFormat::mistral);
        QTest::newRow("mistral v11") << QByteArray(kMistralV11) << int(ToolCallFormat::mistral_v11);
        QTest::newRow("qwen3 coder") << QByteArray(kQwen3Coder) << int(ToolCallFormat::qwen3_coder);
        QTest::newRow("chatml without tools")
            << QByteArray::fromStdString(source("tests/chat_template/data/chatml.jinja"))
            << int(ToolCallFormat::hermes);
        QTest::newRow("mistral without tools")
            << QByteArray::fromStdString(source("tests/chat_template/data/mistral_style.jinja"))
            << int(ToolCallFormat::hermes);
    }
    void detects_the_format_from_the_template() {
        QFETCH(QByteArray, tmpl);
        QFETCH(int, format);
        QCOMPARE(int(detect_tool_call_format(tmpl.toStdString())), format);
        QCOMPARE(int(choose_tool_call_format("auto", tmpl.toStdString())), format);
    }
    void parser_names_override_detection() {
        const std::string qwen = source("tests/server/data/qwen3_chat_template.jinja");
        QCOMPARE(choose_tool_call_format("llama3_json", qwen), ToolCallFormat::llama3_json);
        QCOMPARE(choose_tool_call_format("qwen3_coder", qwen), ToolCallFormat::qwen3_coder);
        QCOMPARE(choose_tool_call_format("mistral", qwen), ToolCallFormat::mistral);
        QCOMPARE(choose_tool_call_format("mistral", kMistralV11), ToolCallFormat::mistral_v11);
        QCOMPARE(choose_tool_call_format("hermes", kMistralV11), ToolCallFormat::hermes);
        for (const char* n : {"auto", "hermes", "llama3_json", "mistral", "qwen3_coder"})
            QVERIFY(is_tool_call_parser_name(n));
        for (const char* n : {"", "Hermes", "llama3", "pythonic"}) QVERIFY(!is_tool_call_parser_name(n));
        QCOMPARE(tool_call_format_name(ToolCallFormat::mistral_v11), std::string_view("mistral"));
        QVERIFY(tool_call_markers_are_special(ToolCallFormat::mistral));
        QVERIFY(tool_call_markers_are_special(ToolCallFormat::llama3_json));
        QVERIFY(!tool_call_markers_are_special(ToolCallFormat::hermes));
        QVERIFY(!tool_call_markers_are_special(ToolCallFormat::qwen3_coder));
    }
    // Two calls written from tool_call_syntax() parse back as two calls: the grammar's syntax and the parser
    // agree.
    void syntax_round_trips_through_the_parser() {
        using Form = ToolCallSyntax::ArgsForm;
        for (ToolCallFormat f : {ToolCallFormat::hermes, ToolCallFormat::llama3_json, ToolCallFormat::mistral,
                                 ToolCallFormat::mistral_v11, ToolCallFormat::qwen3_coder}) {
            const ToolCallSyntax s = tool_call_syntax(f);
            auto one = [&](const char* name, const char* arg) -> std::string {
                switch (s.form) {
                    case Form::json_object_name_arguments:
                        return std::string("{\"name\": \"") + name + "\", \"arguments\": {\"x\": \"" + arg + "\"}}";
                    case Form::json_object_name_parameters:
                        return std::string("{\"name\": \"") + name + "\", \"parameters\": {\"x\": \"" + arg + "\"}}";
                    case Form::mistral_v11:
                        return std::string(name) + "[ARGS]{\"x\": \"" + arg + "\"}";
                    case Form::qwen3_xml:
                        return std::string("<function=") + name + ">\n<parameter=x>\n" + arg +
                               "\n</parameter>\n</function>";
                }
                return {};
            };
            const std::string text = s.list_begin + s.begin + one("f", "1") + s.end + s.separator + s.begin +
                                     one("g", "2") + s.end + s.list_end;
            ToolCallParser p(f, nullptr);
            ToolParseDelta d;
            p.feed(text, d);
            p.finish(d);
            QVERIFY2(d.calls.size() == 2, text.c_str());
            QCOMPARE(d.calls[0].name, std::string("f"));
            QCOMPARE(d.calls[1].arguments, std::string(R"({"x":"2"})"));
            QVERIFY2(d.content.find_first_not_of(" \n") == std::string::npos, d.content.c_str());
        }
    }
    void reasoning_mode_from_the_rendered_prompt() {
        const std::string hybrid = source("tests/server/data/qwen3_chat_template.jinja");
        const std::string thinking = qwen3_thinking_template();
        const std::string chatml = source("tests/chat_template/data/chatml.jinja");
        QCOMPARE(template_reasoning(hybrid), TemplateReasoning::think);
        QCOMPARE(template_reasoning(chatml), TemplateReasoning::none);
        QCOMPARE(template_reasoning(""), TemplateReasoning::unknown);
        // Hybrid Qwen3: the model opens <think> itself; enable_thinking=false closes an empty block in the prompt.
        QCOMPARE(reasoning_mode(TemplateReasoning::think, prompt_tail(hybrid, ojson::object())),
                 ReasoningMode::model_opens);
        const std::string off = prompt_tail(hybrid, {{"enable_thinking", false}});
        QVERIFY(off.size() >= 19 && off.substr(off.size() - 19) == "<think>\n\n</think>\n\n");
        QCOMPARE(reasoning_mode(TemplateReasoning::think, off), ReasoningMode::model_opens);
        // Thinking releases and R1 distills: the prompt ends inside the block.
        const std::string opened = prompt_tail(thinking, ojson::object());
        QVERIFY(opened.size() >= 8 && opened.substr(opened.size() - 8) == "<think>\n");
        QCOMPARE(reasoning_mode(TemplateReasoning::think, opened), ReasoningMode::prompt_opened);
        QCOMPARE(reasoning_mode(TemplateReasoning::think, prompt_tail(thinking, {{"enable_thinking", false}})),
                 ReasoningMode::model_opens);
        QCOMPARE(reasoning_mode(TemplateReasoning::none, prompt_tail(chatml, ojson::object())), ReasoningMode::none);
        QCOMPARE(reasoning_mode(TemplateReasoning::unknown, ""), ReasoningMode::model_opens);
    }
    void splits_reasoning_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("reasoning");
        QTest::addColumn<QByteArray>("content");
        QTest::newRow("model opens") << int(ReasoningMode::model_opens)
                                     << QByteArray("<think>\nHmm, sunny.\n</think>\n\nIt is sunny.")
                                     << QByteArray("Hmm, sunny.\n") << QByteArray("It is sunny.");
        QTest::newRow("model opens, empty block")
            << int(ReasoningMode::model_opens) << QByteArray("<think>\n\n</think>\n\nHi.") << QByteArray("")
            << QByteArray("Hi.");
        QTest::newRow("thinking off: all content") << int(ReasoningMode::model_opens) << QByteArray("Hi <think> there.")
                                                   << QByteArray("") << QByteArray("Hi <think> there.");
        QTest::newRow("prompt opened") << int(ReasoningMode::prompt_opened)
                                       << QByteArray("Hmm, sunny.\n</think>\n\nIt is sunny.")
                                       << QByteArray("Hmm, sunny.\n") << QByteArray("It is sunny.");
        QTest::newRow("prompt opened, cut short")
            << int(ReasoningMode::prompt_opened) << QByteArray("Still thinking</thi")
            << QByteArray("Still thinking</thi") << QByteArray("");
        QTest::newRow("no reasoning format") << int(ReasoningMode::none) << QByteArray("<think>x</think>y")
                                             << QByteArray("") << QByteArray("<think>x</think>y");
    }
    void splits_reasoning() {
        QFETCH(int, mode);
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, reasoning);
        QFETCH(QByteArray, content);
        for (const auto& pieces : testing::parser_chunkings(text.toStdString())) {
            const ReasoningDelta d = split(ReasoningMode(mode), pieces);
            QCOMPARE(d.reasoning, reasoning.toStdString());
            QCOMPARE(d.content, content.toStdString());
        }
    }
};

QTEST_GUILESS_MAIN(TstChatFormatChoice)
#include "tst_chat_format_choice.moc"
