// Jinja interpreter unit tests: rendering with Python semantics, undefined behaviour, error lines and
// raise_exception messages, ChatTemplate message normalisation.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <thread>

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
        QTest::newRow("hex escapes") << "{{ '\\x41\\u00e9\\U0001F600' }}"
                                     << "A\u00e9\U0001F600";
        QTest::newRow("python none/bools") << "{{ none }} {{ true }} {{ [none, false, 'a'] }}"
                                           << "None True [None, False, 'a']";
        QTest::newRow("int arithmetic") << "{{ 3 - 1 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 10 / 4 }} {{ 2 ** 3 }}"
                                        << "2 3 2 2.5 8";
        QTest::newRow("filter binds tighter") << "{{ [1, 2, 3]|length - 1 }}"
                                              << "2";
        QTest::newRow("slices") << "{{ [1, 2, 3][::-1] }} {{ 'abc'[1:] }} {{ [1, 2, 3][-1] }}"
                                << "[3, 2, 1] bc 3";
        QTest::newRow("namespace")
            << "{% set ns = namespace(n=0) %}{% for i in [1, 2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"
            << "3";
        QTest::newRow("loop scope") << "{% set x = 1 %}{% for i in [5] %}{% set x = i %}{% endfor %}{{ x }}"
                                    << "1";
        QTest::newRow("trim/lstrip blocks") << "a\n  {% if true %}\n  b\n  {% endif %}\nc"
                                            << "a\n  b\nc";
        QTest::newRow("tojson spacing") << "{{ {'a': [1, 'é']}|tojson }}"
                                        << "{\"a\": [1, \"é\"]}";
        QTest::newRow("undefined prints empty") << "[{{ missing }}]{{ missing is defined }}"
                                                << "[]False";
        QTest::newRow("macro") << "{% macro m(x, y='!') %}{{ x }}{{ y }}{% endmacro %}{{ m('a') }}"
                               << "a!";
    }
    void renders() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(render(source.toStdString())), expected);
    }

    // Jinja2's default Undefined: prints empty, is falsy and iterable, but using it as a value raises.
    void undefined_semantics_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");  // "!" + fragment: must fail with that fragment
        QTest::newRow("prints empty") << "[{{ nope }}]"
                                      << "[]";
        QTest::newRow("falsy") << "{% if nope %}y{% else %}n{% endif %}"
                               << "n";
        QTest::newRow("iterates empty") << "{% for x in nope %}x{% else %}empty{% endfor %}"
                                        << "empty";
        QTest::newRow("length zero") << "{{ nope|length }}"
                                     << "0";
        QTest::newRow("default") << "{{ nope|default('d') }}"
                                 << "d";
        QTest::newRow("concat") << "{{ nope ~ 'x' }}"
                                << "x";
        QTest::newRow("missing key is undefined") << "{{ {'a': 1}.b is defined }}"
                                                  << "False";
        QTest::newRow("missing index is undefined") << "{{ [1][5] is undefined }}"
                                                    << "True";
        QTest::newRow("dict.get gives None") << "{{ {'a': 1}.get('b') }}"
                                             << "None";
        QTest::newRow("attribute raises") << "{{ nope.x }}"
                                          << "!'nope' is undefined";
        QTest::newRow("item raises") << "{{ nope[0] }}"
                                     << "!'nope' is undefined";
        QTest::newRow("arithmetic raises") << "{{ nope + 1 }}"
                                           << "!'nope' is undefined";
        QTest::newRow("call raises") << "{{ nope() }}"
                                     << "!'nope' is undefined";
        QTest::newRow("missing attr chain raises") << "{{ {'a': 1}.b.c }}"
                                                   << "!'dict object' has no attribute 'b'";
        QTest::newRow("inline if without else") << "[{{ 'x' if false }}]"
                                                << "[]";
        QTest::newRow("generator has no len") << "{{ [1]|select('odd')|length }}"
                                              << "!has no len()";
        QTest::newRow("generator is truthy") << "{{ 'yes' if [2]|select('odd') else 'no' }}"
                                             << "yes";
        QTest::newRow("sandbox refuses mutation") << "{{ [1].append(2) }}"
                                                  << "!unsafe";
    }
    void undefined_semantics() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        if (!expected.startsWith('!')) {
            QCOMPARE(QString::fromStdString(render(source.toStdString())), expected);
            return;
        }
        try {
            render(source.toStdString());
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QVERIFY2(QString(e.what()).contains(expected.mid(1)), e.what());
        }
    }

    // template_limits.h: hostile templates fail with a TemplateError instead of hanging or exhausting memory;
    // "!" rows expect an error containing the rest.
    void limits_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        // 1 ** 2^63-1 multiplied 2^63 times (no overflow ever stopped it); now square-and-multiply.
        QTest::newRow("pow of one ends") << "{{ 1 ** 9223372036854775807 }} {{ (-1) ** 9223372036854775807 }}"
                                         << "1 -1";
        QTest::newRow("pow exact") << "{{ 3 ** 39 }} {{ 2 ** 62 }} {{ 0 ** 0 }} {{ 7 ** 1 }}"
                                   << "4052555153018976267 4611686018427387904 1 7";
        QTest::newRow("pow overflows") << "{{ 3 ** 40 }}"
                                       << "!out of range";
        QTest::newRow("repetition too large") << "{{ 'ab' * 9223372036854775807 }}"
                                              << "!too large";
        QTest::newRow("negative repetition is empty") << "[{{ 'ab' * -3 }}]"
                                                      << "[]";
        QTest::newRow("doubling string stops")
            << "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
            << "!too large";
        QTest::newRow("nested loops stop")
            << "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
            << "!loop iterations";
        QTest::newRow("recursive macro loops stop")
            << "{% macro m(n) %}{% for i in range(100000) %}{% endfor %}{{ m(n) if n > 0 }}{% endmacro %}{{ m(1) }}"
            << "!loop iterations";
        QTest::newRow("center width") << "{{ 'a'|center(9223372036854775807) }}"
                                      << "!width";
        QTest::newRow("indent width") << "{{ 'a\nb'|indent(1000000000) }}"
                                      << "!width";
        QTest::newRow("tojson indent") << "{{ [1]|tojson(indent=1000000000) }}"
                                       << "!width";
        QTest::newRow("format width overflows int") << "{{ '%99999999999d' % 1 }}"
                                                    << "!width";
        QTest::newRow("format precision") << "{{ '%.99999999999f' % 1.5 }}"
                                          << "!width";
        // Chained joins multiply a string by each separator's length (found by fuzz_jinja: out of memory).
        QTest::newRow("chained joins")
            << "{{ 'abcdefgh'|join('x' * 100)|join('y' * 100)|join('z' * 100)|join('w' * 100) }}"
            << "!too l";  // "too large" to build or "too long" to iterate
        QTest::newRow("str.join") << "{{ ('x' * 5000).join('a' * 5000) }}"
                                  << "!too large";
        QTest::newRow("replace") << "{{ ('a' * 5000).replace('a', 'b' * 5000) }}"
                                 << "!too large";
        QTest::newRow("iterating a long string") << "{{ ('a' * 2000000)|join(',') }}"
                                                 << "!too long to iterate";
        QTest::newRow("widths within the limit") << "[{{ 'a'|center(5) }}][{{ '%3d' % 7 }}][{{ '%.2f' % 1.5 }}]"
                                                 << "[  a  ][  7][1.50]";
        QTest::newRow("deep parentheses") << "{{ " + QString(5000, '(') + "1" + QString(5000, ')') + " }}"
                                          << "!nested more than 200";
        QTest::newRow("deep not") << "{{ " + QString("not ").repeated(5000) + "1 }}"
                                  << "!nested more than 200";
        QTest::newRow("deep blocks") << QString("{% if 1 %}").repeated(300) + QString("{% endif %}").repeated(300)
                                     << "!nested more than 200";
        QTest::newRow("nesting within the limit") << "{{ " + QString(150, '(') + "1" + QString(150, ')') + " }}"
                                                  << "1";
    }
    void limits() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        if (!expected.startsWith('!')) {
            QCOMPARE(QString::fromStdString(render(source.toStdString())), expected);
            return;
        }
        try {
            render(source.toStdString());
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QVERIFY2(QString(e.what()).contains(expected.mid(1)), e.what());
        }
    }

    void parse_errors_carry_line_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("line");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("unknown filter") << "a\nb\n{{ x|foo }}" << 3 << "unknown filter 'foo'";
        QTest::newRow("unclosed if") << "{% if x %}\nyes" << 1 << "endif";
        QTest::newRow("unterminated string") << "\n{{ 'abc }}" << 2 << "unterminated string";
        QTest::newRow("stray endfor") << "x\n{% endfor %}" << 2 << "endfor";
        QTest::newRow("unknown test") << "{{ x is frobnicated }}" << 1 << "unknown test 'frobnicated'";
        QTest::newRow("unknown tag") << "\n\n{% include 'x' %}" << 3 << "unknown tag 'include'";
        QTest::newRow("bad character") << "{{ a $ b }}" << 1 << "unexpected character '$'";
        QTest::newRow("unclosed comment") << "a {# never closed" << 1 << "unterminated comment";
        QTest::newRow("missing endraw") << "{% raw %}x" << 1 << "endraw";
        QTest::newRow("missing expression") << "{{ }}" << 1 << "expected an expression";
        // std::stoul threw std::invalid_argument out of the lexer (found by fuzz_jinja).
        QTest::newRow("bad hex escape") << "{{ '\\xzz' }}" << 1 << "truncated";
        QTest::newRow("short hex escape") << "{{ '\\x1z' }}" << 1 << "truncated";
        QTest::newRow("escape beyond unicode") << "{{ '\\U00110000' }}" << 1 << "not a Unicode character";
        QTest::newRow("surrogate escape") << "{{ '\\ud800' }}" << 1 << "not a Unicode character";
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

    void lexer_error_has_column() {
        try {
            Template t("line one\n  {{ 1 + }}");
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QCOMPARE(e.line(), 2);
            QCOMPARE(e.column(), 10);
            QCOMPARE(QString(e.what()), QString("template line 2, column 10: expected an expression, found '}}'"));
        }
    }

    void render_error_names_line() {
        try {
            render("a\nb\n{{ 'x' + 1 }}");
            QFAIL("expected a TemplateError");
        } catch (const TemplateError& e) {
            QCOMPARE(QString(e.what()), QString("template line 3: can only concatenate str (not \"int\") to str"));
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
        auto cfg = nlohmann::json{{"chat_template",
                                   "{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ "
                                   "m.tool_calls[0].function.arguments.city if m.tool_calls else '' }};{% endfor %}"},
                                  {"eos_token", {{"__type", "AddedToken"}, {"content", "</s>"}}}};
        ChatTemplate ct = ChatTemplate::from_config(cfg);
        // Built from values rather than raw string literals: moc's lexer cannot read those.
        nlohmann::json parts =
            nlohmann::json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
        nlohmann::json call = {{"type", "function"},
                               {"function", {{"name", "f"}, {"arguments", "{\"city\": \"Paris\"}"}}}};
        nlohmann::json msgs =
            nlohmann::json::array({{{"role", "developer"}, {"content", parts}},
                                   {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}});
        QCOMPARE(QString::fromStdString(ct.render(msgs, nullptr, false, nlohmann::json::object())),
                 QString("system:a\nb:;assistant:None:Paris;"));
        nlohmann::json bad = nlohmann::json::array(
            {{{"role", "user"},
              {"content", nlohmann::json::array({{{"type", "image_url"}, {"image_url", nlohmann::json::object()}}})}}});
        QVERIFY_THROWS_EXCEPTION(loradesk::ExpectedError, ct.render(bad, nullptr, false, nlohmann::json::object()));
    }

    void named_templates_pick_tool_use() {
        auto cfg = nlohmann::json::parse(
            "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D{{ tools is none }}\"},"
            " {\"name\": \"tool_use\", \"template\": \"T{{ tools|length }}\"}], \"bos_token\": \"<s>\"}");
        ChatTemplate ct = ChatTemplate::from_config(cfg);
        nlohmann::json msgs = nlohmann::json::array({{{"role", "user"}, {"content", "x"}}});
        QCOMPARE(QString::fromStdString(ct.render(msgs, nullptr, false, nullptr)), QString("DTrue"));
        QCOMPARE(QString::fromStdString(ct.render(msgs, nlohmann::json::array({1, 2}), false, nullptr)), QString("T2"));
    }

    void model_dir_prefers_jinja_file() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        std::string root = dir.path().toStdString();
        std::ofstream(root + "/tokenizer_config.json") << "{\"chat_template\": \"from config\", \"eos_token\": "
                                                          "{\"__type\": \"AddedToken\", \"content\": \"<|e|>\"}}";
        std::ofstream(root + "/chat_template.jinja")
            << "{{ messages[0].content }}{{ eos_token }}{{ enable_thinking }}\n";
        ChatTemplate ct = ChatTemplate::from_model_dir(root);
        nlohmann::json msgs = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
        // The file's single trailing newline is dropped, as Jinja2 does (keep_trailing_newline=False).
        QCOMPARE(QString::fromStdString(ct.render(msgs, nullptr, true, {{"enable_thinking", false}})),
                 QString("hi<|e|>False"));
        QVERIFY_THROWS_EXCEPTION(loradesk::ExpectedError, ChatTemplate::from_model_dir(root + "/missing"));
    }

    void concurrent_renders_agree() {
        Template t(
            "{% set ns = namespace(n=0) %}{% for i in range(200) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"
            "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(ns.n) }}");
        std::vector<std::string> results(4);
        std::vector<std::thread> threads;
        for (int k = 0; k < 4; ++k)
            threads.emplace_back([&, k] {
                for (int i = 0; i < 50; ++i) results[k] = t.render({});
            });
        for (auto& th : threads) th.join();
        for (auto& r : results) QCOMPARE(QString::fromStdString(r), QString("19900<19900>"));
    }
};

QTEST_GUILESS_MAIN(TstJinja)
#include "tst_jinja.moc"
