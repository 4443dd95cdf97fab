// Jinja interpreter unit tests: rendering with Python semantics, undefined behaviour, error lines and
// raise_exception messages, ChatTemplate message normalisation.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/jinja/template.h"

using namespace loradesk::jinja;

namespace {

std::string render(const std::string& source, const nlohmann::json& vars = nlohmann::json::object()) {
    return Template(source).render_json(vars);
}

}  // namespace

class TstJinja : public QObject {
    Q_OBJECT
private slots:
    void renders_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        QTest::newRow("python none/bools") << "{{ none }} {{ true }} {{ [none, false, 'a'] }}" << "None True [None, False, 'a']";
        QTest::newRow("int arithmetic") << "{{ 3 - 1 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 10 / 4 }} {{ 2 ** 3 }}" << "2 3 2 2.5 8";
        QTest::newRow("filter binds tighter") << "{{ [1, 2, 3]|length - 1 }}" << "2";
        QTest::newRow("slices") << "{{ [1, 2, 3][::-1] }} {{ 'abc'[1:] }} {{ [1, 2, 3][-1] }}" << "[3, 2, 1] bc 3";
        QTest::newRow("namespace") << "{% set ns = namespace(n=0) %}{% for i in [1, 2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}" << "3";
        QTest::newRow("loop scope") << "{% set x = 1 %}{% for i in [5] %}{% set x = i %}{% endfor %}{{ x }}" << "1";
        QTest::newRow("trim/lstrip blocks") << "a\n  {% if true %}\n  b\n  {% endif %}\nc" << "a\n  b\nc";
        QTest::newRow("tojson spacing") << "{{ {'a': [1, 'é']}|tojson }}" << "{\"a\": [1, \"é\"]}";
        QTest::newRow("undefined prints empty") << "[{{ missing }}]{{ missing is defined }}" << "[]False";
        QTest::newRow("macro") << "{% macro m(x, y='!') %}{{ x }}{{ y }}{% endmacro %}{{ m('a') }}" << "a!";
    }
    void renders() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(render(source.toStdString())), expected);
    }

    void parse_errors_carry_line_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("line");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("unknown filter") << "a\nb\n{{ x|foo }}" << 3 << "unknown filter 'foo'";
        QTest::newRow("unclosed if") << "{% if x %}\nyes" << 1 << "endif";
        QTest::newRow("unterminated string") << "\n{{ 'abc }}" << 2 << "unterminated string";
        QTest::newRow("stray endfor") << "x\n{% endfor %}" << 2 << "endfor";
    }
    void parse_errors_carry_line() {
        QFETCH(QString, source);
        QFETCH(int, line);
        QFETCH(QString, fragment);
        try {
            Template t(source.toStdString());
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QCOMPARE(e.line(), line);
            QVERIFY2(QString(e.what()).contains(fragment), e.what());
            QVERIFY2(QString(e.what()).startsWith(QString("template line %1").arg(line)), e.what());
        }
    }

    void undefined_attribute_raises() {
        try {
            render("ok\n{{ missing.attr }}");
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QCOMPARE(e.line(), 2);
            QVERIFY2(QString(e.what()).contains("'missing' is undefined"), e.what());
        }
    }

    void raise_exception_is_verbatim() {
        try {
            render("{{ raise_exception('Roles must alternate') }}");
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QVERIFY(e.raised_by_template());
            QCOMPARE(QString(e.what()), QString("Roles must alternate"));
        }
    }

    void chat_template_normalises_messages() {
        auto cfg = nlohmann::json{{"chat_template", "{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.tool_calls[0].function.arguments.city if m.tool_calls else '' }};{% endfor %}"},
                                  {"eos_token", {{"__type", "AddedToken"}, {"content", "</s>"}}}};
        ChatTemplate ct = ChatTemplate::from_config(cfg);
        // Built from values rather than raw string literals: moc's lexer cannot read those.
        nlohmann::json parts = nlohmann::json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
        nlohmann::json call = {{"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{\"city\": \"Paris\"}"}}}};
        nlohmann::json msgs = nlohmann::json::array({{{"role", "developer"}, {"content", parts}},
                                                     {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}});
        QCOMPARE(QString::fromStdString(ct.render(msgs, nullptr, false, nlohmann::json::object())),
                 QString("system:a\nb:;assistant:None:Paris;"));
        nlohmann::json bad = nlohmann::json::array(
            {{{"role", "user"}, {"content", nlohmann::json::array({{{"type", "image_url"}, {"image_url", nlohmann::json::object()}}})}}});
        QVERIFY_THROWS_EXCEPTION(loradesk::ExpectedError, ct.render(bad, nullptr, false, nlohmann::json::object()));
    }
};

QTEST_GUILESS_MAIN(TstJinja)
#include "tst_jinja.moc"
