// engine/grammar: the GBNF dialect (every syntax feature, checked by what the compiled grammar matches), every
// compile error with its message, the limits against hostile grammars, and the grammar cache.
#include <QtTest>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_cache.h"
#include "grammar_test_util.h"

using namespace loradesk;
using namespace loradesk::grammar;
using grammar::test::match_kind;

class TstGbnfParser : public QObject {
    Q_OBJECT
  private slots:
    void matches_data() {
        QTest::addColumn<QString>("gbnf");
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<int>("expected");  // 1 full match, 0 viable prefix, -1 rejected
        auto row = [](const char* name, const char* g, QByteArray in, int e) {
            QTest::newRow(name) << QString::fromUtf8(g) << in << e;
        };
        row("literal", "root ::= \"abc\"", "abc", 1);
        row("literal prefix", "root ::= \"abc\"", "ab", 0);
        row("literal wrong", "root ::= \"abc\"", "abd", -1);
        row("literal too long", "root ::= \"abc\"", "abcd", -1);
        row("alternatives", "root ::= \"a\" | \"bc\"", "bc", 1);
        row("escapes", "root ::= \"\\n\\r\\t\\\\\\\"\\'\\[\\]\"", "\n\r\t\\\"'[]", 1);
        row("hex escape", "root ::= \"\\x41\\u00e9\\U0001F600\"", "A\xC3\xA9\xF0\x9F\x98\x80", 1);
        row("utf8 literal", "root ::= \"h\xC3\xA9\"", "h\xC3\xA9", 1);
        row("utf8 partial", "root ::= \"h\xC3\xA9\"", "h\xC3", 0);
        row("class range", "root ::= [a-c0-9_]+", "ab9_c", 1);
        row("class miss", "root ::= [a-c]+", "abd", -1);
        row("negated class", "root ::= [^a-c]+", "xyz", 1);
        row("negated class miss", "root ::= [^a-c]+", "xa", -1);
        row("negated class utf8", "root ::= [^a]+", "\xE4\xB8\xAD\xF0\x9F\x98\x80", 1);
        row("class escapes", "root ::= [\\]\\[\\\\\\n\\x41-\\x42]+", "][\\\nAB", 1);
        row("class unicode range", "root ::= [\\u4e00-\\u9fff]+", "\xE4\xB8\xAD\xE6\x96\x87", 1);
        row("class unicode range miss", "root ::= [\\u4e00-\\u9fff]+", "\xE3\x81\x82", -1);
        row("class dash literal at end", "root ::= [a-]+", "-a-", 1);
        row("any char", "root ::= . . .", "a\xC3\xA9\xF0\x9F\x98\x80", 1);
        row("any char rejects invalid utf8", "root ::= .", "\xFF", -1);
        row("any char rejects surrogate", "root ::= .", "\xED\xA0\x80", -1);
        row("group", "root ::= (\"a\" | \"b\") \"c\"", "bc", 1);
        row("star empty", "root ::= \"a\"*", "", 1);
        row("star many", "root ::= \"a\"*", "aaaa", 1);
        row("plus needs one", "root ::= \"a\"+", "", 0);
        row("optional", "root ::= \"a\"? \"b\"", "b", 1);
        row("literal postfix applies to whole literal", "root ::= \"ab\"+", "abab", 1);
        row("literal postfix half", "root ::= \"ab\"+", "aba", 0);
        row("exact count", "root ::= \"a\"{3}", "aaa", 1);
        row("exact count short", "root ::= \"a\"{3}", "aa", 0);
        row("exact count long", "root ::= \"a\"{3}", "aaaa", -1);
        row("min count", "root ::= \"a\"{2,}", "aaaaaa", 1);
        row("min count short", "root ::= \"a\"{2,}", "a", 0);
        row("range count", "root ::= \"a\"{2,4} \"b\"", "aaaab", 1);
        row("range count over", "root ::= \"a\"{2,4} \"b\"", "aaaaa", -1);
        row("max only", "root ::= \"a\"{,2} \"b\"", "b", 1);
        row("max only over", "root ::= \"a\"{,2} \"b\"", "aaa", -1);
        row("group repetition", "root ::= (\"ab\" | \"c\"){2}", "cab", 1);
        row("nested repetition", "root ::= (\"a\"{2}){2}", "aaaa", 1);
        row("comments", "# head\nroot ::= \"a\" # tail\n  # more\n", "a", 1);
        row("newlines in parens", "root ::= (\n  \"a\"\n  | \"b\"\n)", "b", 1);
        row("continuation line with bar", "root ::= \"a\"\n  | \"b\"\n", "b", 1);
        row("rule refs", "root ::= greeting \" \" name\ngreeting ::= \"hi\" | \"yo\"\nname ::= [a-z]+", "yo bob", 1);
        row("names with dash dot underscore", "root ::= a-b.c_d\na-b.c_d ::= \"x\"", "x", 1);
        row("empty alternative", "root ::= \"a\" | ", "", 1);
        row("empty literal", "root ::= \"\" \"a\"", "a", 1);
        row("nullable star of nullable", "root ::= (\"a\"?)* \"b\"", "aab", 1);
        row("right recursion", "root ::= \"(\" root \")\" | \"x\"", "((x))", 1);
        row("unused undefined-free rules ok", "root ::= \"a\"\nunused ::= \"b\"", "a", 1);
        row("never-finishing alternative dropped", "root ::= \"a\" | \"b\" loop\nloop ::= \"c\" loop", "b", -1);
        row("json", grammar::test::kJsonGbnf.data(), "{\"a\": [1, -2.5e3, true, null, \"x\\\"y\\u00e9\"], \"b\": {}}",
            1);
        row("json prefix", grammar::test::kJsonGbnf.data(), "{\"a\": [1, -2.", 0);
        row("json bad", grammar::test::kJsonGbnf.data(), "{\"a\": [1,,", -1);
    }
    void matches() {
        QFETCH(QString, gbnf);
        QFETCH(QByteArray, input);
        QFETCH(int, expected);
        auto g = compile_gbnf(gbnf.toStdString());
        QVERIFY2(g.ok(), g.status().message.c_str());
        QCOMPARE(match_kind(g.value(), std::string_view(input.constData(), std::size_t(input.size()))), expected);
    }

    void custom_root() {
        auto g = compile_gbnf("a ::= \"x\"\nb ::= \"y\"", "b");
        QVERIFY(g.ok());
        QCOMPARE(match_kind(g.value(), "y"), 1);
        QCOMPARE(match_kind(g.value(), "x"), -1);
    }

    void errors_data() {
        QTest::addColumn<QByteArray>("gbnf");
        QTest::addColumn<QString>("message");
        auto row = [](const char* name, std::string g, const char* m) {
            QTest::newRow(name) << QByteArray::fromStdString(g) << QString::fromUtf8(m);
        };
        row("empty", "", "empty grammar");
        row("only comments", "# nothing\n\n", "empty grammar");
        row("no root", "a ::= \"x\"", "the grammar has no rule 'root'");
        row("undefined rule", "root ::= \"a\"\n  foo", "");  // line 2 starts a new rule without ::=
        row("undefined ref", "root ::= \"a\" foo", "GBNF line 1, column 14: rule 'foo' is used but not defined");
        row("missing ::=", "root = \"a\"", "GBNF line 1, column 6: expected '::=' after rule name 'root'");
        row("no name", "::= \"a\"", "GBNF line 1, column 1: expected a rule name");
        row("unterminated literal", "root ::= \"abc", "unterminated string literal");
        row("literal across lines", "root ::= \"ab\nc\"", "unterminated string literal (it must end on its line)");
        row("unterminated class", "root ::= [abc", "unterminated character class");
        row("reversed range", "root ::= [z-a]",
            "GBNF line 1, column 12: range U+007A-U+0061 in a character class is reversed");
        row("unclosed group", "root ::= (\"a\"", "expected ')' to close the group opened at line 1, column 10");
        row("bad escape", "root ::= \"\\q\"", "GBNF line 1, column 11: unknown escape '\\q'");
        row("short hex", "root ::= \"\\x4\"", "expected 2 hex digits");
        row("beyond unicode", "root ::= \"\\U00110000\"", "beyond U+10FFFF");
        row("invalid utf8", "root ::= \"\xFF\"", "invalid UTF-8");
        row("nothing to repeat", "root ::= *", "'*' has nothing to repeat");
        row("bad braces", "root ::= \"a\"{2", "expected '}' to close the repetition");
        row("max below min", "root ::= \"a\"{3,2}", "repetition {3,2} has its maximum below its minimum");
        row("repetition limit", "root ::= \"a\"{0,10001}", "repetition count over 10000");
        row("trailing junk", "root ::= \"a\" ) \"b\"", "unexpected ')' in rule 'root'");
        row("defined twice", "root ::= \"a\"\nroot ::= \"b\"",
            "GBNF line 2, column 1: rule 'root' is defined twice (first on line 1)");
        row("direct left recursion", "root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive");
        row("indirect left recursion", "root ::= expr\nexpr ::= term \"+\" | \"x\"\nterm ::= expr \"*\"",
            "is left-recursive: it can reach itself before matching any character");
        row("hidden left recursion", "root ::= opt root \"a\" | \"b\"\nopt ::= \"x\"?",
            "rule 'root' is left-recursive");
        row("never finishes", "root ::= \"a\" root", "rule 'root' can never finish");
        row("empty class never matches", "root ::= [^\\x00-\\U0010FFFF]", "rule 'root' can never finish");
        std::string many = "root ::=";
        for (int i = 0; i < 101; ++i) many += " \"a\"{10000}";
        row("too many elements", many, "more than 1000000 elements after expanding repetitions");
    }
    void errors() {
        QFETCH(QByteArray, gbnf);
        QFETCH(QString, message);
        auto g = compile_gbnf(gbnf.toStdString());
        QVERIFY(!g.ok());
        QCOMPARE(g.status().code, ErrorCode::invalid_argument);
        QVERIFY2(QString::fromStdString(g.status().message).contains(message), g.status().message.c_str());
    }

    void text_size_limit() {
        std::string big = "root ::= \"a\"\n" + std::string(kMaxGrammarBytes, '#');
        auto g = compile_gbnf(big);
        QVERIFY(!g.ok());
        QCOMPARE(g.status().code, ErrorCode::too_large);
        QVERIFY(QString::fromStdString(g.status().message).contains("over the limit"));
    }

    void rule_count_limit() {
        std::string text = "root ::= r0\n";
        for (std::size_t i = 0; i <= kMaxUserRules; ++i) {
            text += 'r';  // appended piecewise: GCC 12 warns (-Wrestrict, falsely) on "r" + std::to_string(i)
            text += std::to_string(i);
            text += " ::= \"a\"\n";
        }
        auto g = compile_gbnf(text);
        QVERIFY(!g.ok());
        QVERIFY2(QString::fromStdString(g.status().message).contains("more than 10000 rules"),
                 g.status().message.c_str());
    }

    void nested_repetition_stays_linear() {
        // Repeating a group repeats a reference to one rule, so nesting does not multiply the grammar's size.
        auto g = compile_gbnf("root ::= ((\"a\"{10000}){100}){100}");
        QVERIFY(g.ok());
        QVERIFY(g.value()->elements.size() < 100000);
    }

    void nesting_limit() {  // the parser recurses per group: deep nesting is an error, not a stack overflow
        auto deep = compile_gbnf("root ::= " + std::string(100000, '('));
        QVERIFY(!deep.ok());
        QVERIFY2(QString::fromStdString(deep.status().message).contains("groups nested more than 200 deep"),
                 deep.status().message.c_str());
        auto ok = compile_gbnf("root ::= " + std::string(150, '(') + "\"a\"" + std::string(150, ')'));
        QVERIFY(ok.ok());
    }

    void long_rule_chain_compiles_in_linear_time() {
        // Rules defined in reverse order of dependency: a repeat-until-stable analysis would be quadratic.
        std::string text = "root ::= r0\n";
        for (int i = 0; i < 9000; ++i) {
            text += 'r';
            text += std::to_string(i);
            text += " ::= \"b\" r";
            text += std::to_string(i + 1);
            text += " | \"a\"\n";
        }
        text += "r9000 ::= \"z\"\n";
        QElapsedTimer timer;
        timer.start();
        auto g = compile_gbnf(text);
        QVERIFY(g.ok());
        QVERIFY2(timer.elapsed() < 2000, qPrintable(QString::number(timer.elapsed())));
        QCOMPARE(match_kind(g.value(), "bbba"), 1);
    }

    void big_but_legal_repetition() {
        auto g = compile_gbnf("root ::= [a-z]{0,10000}");
        QVERIFY(g.ok());
        QCOMPARE(match_kind(g.value(), std::string(10000, 'q')), 1);
        QCOMPARE(match_kind(g.value(), std::string(10001, 'q')), -1);
    }

    void cache_compiles_once() {
        GrammarCache cache(2);
        auto a = cache.get_or_compile("root ::= \"a\"");
        auto b = cache.get_or_compile("root ::= \"a\"");
        QVERIFY(a.ok() && b.ok());
        QCOMPARE(a.value().get(), b.value().get());
        auto other_root = cache.get_or_compile("root ::= \"a\"\nx ::= \"b\"", "x");
        QVERIFY(other_root.ok());
        QVERIFY(!cache.get_or_compile("root ::= foo").ok());
        QCOMPARE(cache.size(), std::size_t(2));
        cache.get_or_compile("root ::= \"c\"");
        QCOMPARE(cache.size(), std::size_t(2));  // bounded: the least recent went
        auto again = cache.get_or_compile("root ::= \"a\"");
        QVERIFY(again.value().get() != a.value().get());
    }
};

QTEST_GUILESS_MAIN(TstGbnfParser)
#include "tst_gbnf_parser.moc"
