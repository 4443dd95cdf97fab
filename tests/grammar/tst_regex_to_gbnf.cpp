// engine/grammar: regex_to_gbnf against std::regex (ECMAScript, full match) as the oracle on random strings and on
// strings generated from the grammar itself; the errors for unsupported constructs; gbnf_for_choice escaping.
#include <QtTest>
#include <random>
#include <regex>

#include "grammar/grammar.h"  // the umbrella header: compiles standalone
#include "grammar_test_util.h"

using namespace loradesk;
using namespace loradesk::grammar;
using grammar::test::match_kind;

namespace {
const std::string kAlphabet = "abcdolmruxyz019ABZ_-.@ \t\n{}()";
}

class TstRegexToGbnf : public QObject {
    Q_OBJECT
  private slots:
    void agrees_with_std_regex_data() {
        QTest::addColumn<QString>("regex");
        for (const char* re : {"abc",
                               "a|b|cd",
                               "a*b+c?",
                               "(ab)+",
                               "(?:ab|c){2,3}",
                               "[a-c]{2}x",
                               "[^abc]+",
                               "\\d+(\\.\\d+)?",
                               "\\w+@\\w+\\.com",
                               "^[A-Z][a-z]*$",
                               "a{2,}",
                               "a{0,2}b",
                               ".+",
                               "\\s*x\\s*",
                               "[\\d\\-]+",
                               "(a|b)*c",
                               "a+?b",
                               "x{3}",
                               "[.]",
                               "\\.",
                               "(\\d{4})-\\d{2}",
                               "[a-]",
                               "\\x41\\u0042",
                               "colou?r",
                               "[^\\d\\s]",
                               "\\D\\W\\S",
                               "()",
                               "a|",
                               "(|a)b",
                               "[\\w.]+",
                               "\\{\\}",
                               "(a{1}){2}",
                               "[]a|b",
                               "[^]",
                               "\\t\\n",
                               "(a(b(c)?)?)?",
                               "[a-z0-9_-]{1,5}"}) {
            QTest::newRow(re) << QString::fromUtf8(re);
        }
    }
    void agrees_with_std_regex() {
        QFETCH(QString, regex);
        const std::string re = regex.toStdString();
        auto gbnf = regex_to_gbnf(re);
        QVERIFY2(gbnf.ok(), gbnf.status().message.c_str());
        auto g = compile_gbnf(gbnf.value());
        QVERIFY2(g.ok(), (g.status().message + "\n" + gbnf.value()).c_str());
        const std::regex oracle(re, std::regex::ECMAScript);
        std::mt19937 rng(uint32_t(std::hash<std::string>{}(re)));
        int n_matching = 0;
        auto check = [&](const std::string& s) {
            bool expect = std::regex_match(s, oracle);
            bool got = match_kind(g.value(), s) == 1;
            if (expect != got)
                qFatal("regex /%s/ on '%s': std::regex %d, grammar %d\n%s", re.c_str(), s.c_str(), int(expect),
                       int(got), gbnf.value().c_str());
            n_matching += expect;
        };
        for (int i = 0; i < 1000; ++i) {
            std::string s;
            for (std::size_t n = rng() % 9; n > 0; --n) s += kAlphabet[rng() % kAlphabet.size()];
            check(s);
        }
        // Strings the grammar generates (random byte walks over the alphabet) must match the regex too.
        for (int i = 0; i < 150; ++i) {
            std::string s;
            for (int step = 0; step < 12; ++step) {
                if (match_kind(g.value(), s) == 1 && rng() % 3 == 0) break;
                std::vector<char> next;
                for (char c : kAlphabet)
                    if (match_kind(g.value(), s + c) >= 0) next.push_back(c);
                if (next.empty()) break;
                s += next[rng() % next.size()];
            }
            if (match_kind(g.value(), s) == 1) check(s);
        }
        QVERIFY(n_matching > 0 || re == "[]a|b");
    }

    void named_groups() {  // std::regex has none; they convert like plain groups
        auto named = regex_to_gbnf("(?<year>\\d{4})-(?P<m>\\d{2})");
        auto plain = regex_to_gbnf("(\\d{4})-(\\d{2})");
        QVERIFY(named.ok() && plain.ok());
        QCOMPARE(named.value(), plain.value());
    }

    void unicode() {
        auto gbnf = regex_to_gbnf("[\\u00e9-\\u00eb]+\\u{1F600}.");
        QVERIFY(gbnf.ok());
        auto g = compile_gbnf(gbnf.value());
        QVERIFY(g.ok());
        QCOMPARE(match_kind(g.value(), "\xC3\xA9\xC3\xAB\xF0\x9F\x98\x80\xE4\xB8\xAD"), 1);
        QCOMPARE(match_kind(g.value(), "\xC3\xA8"), -1);
        QCOMPARE(match_kind(g.value(), "\xC3\xA9\xF0\x9F\x98\x80\n"), -1);  // '.' stops at line terminators
    }

    void errors_data() {
        QTest::addColumn<QString>("regex");
        QTest::addColumn<QString>("message");
        auto row = [](const char* re, const char* m) {
            QTest::newRow(re) << QString::fromUtf8(re) << QString::fromUtf8(m);
        };
        row("(?=a)", "lookahead");
        row("a(?!b)", "lookahead");
        row("(?<=a)b", "lookbehind");
        row("(?<!a)b", "lookbehind");
        row("(a)\\1", "backreference \\1 is not supported");
        row("\\k<x>", "named backreference");
        row("a\\b", "word boundary \\b");
        row("\\Ba", "word boundary \\B");
        row("(?i)a", "group modifier '(?i' (inline flags, conditionals) is not supported");
        row("\\p{L}", "Unicode property escape \\p");
        row("a**", "nothing to repeat");
        row("*a", "nothing to repeat before '*'");
        row("(a", "missing ')'");
        row("a)", "unmatched ')'");
        row("[a", "unterminated character class");
        row("a^b", "'^' anchor is only supported at the start");
        row("$a", "'$' anchor is only supported at the end");
        row("a{3,2}", "out of order");
        row("a{10001}", "repetition count over 10000");
        row("[z-a]", "range out of order");
        row("a\\", "lone backslash");
        row("\\012", "octal");
        QTest::newRow("deep nesting") << QString(300, '(') << "groups nested more than 200 deep";
    }
    void errors() {
        QFETCH(QString, regex);
        QFETCH(QString, message);
        auto r = regex_to_gbnf(regex.toStdString());
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.status().message).contains(message), r.status().message.c_str());
    }

    void choice() {
        std::vector<std::string> choices = {"yes", "no", "say \"hi\"\n", "back\\slash", "caf\xC3\xA9", "a|b", ""};
        std::string text = gbnf_for_choice(choices);
        auto g = compile_gbnf(text);
        QVERIFY2(g.ok(), g.status().message.c_str());
        for (const auto& c : choices) QCOMPARE(match_kind(g.value(), c), 1);
        QCOMPARE(match_kind(g.value(), "ye"), 0);
        QCOMPARE(match_kind(g.value(), "yess"), -1);
        QCOMPARE(match_kind(g.value(), "a"), 0);
        QCOMPARE(match_kind(g.value(), "say \"hi\""), 0);
        auto none = compile_gbnf(gbnf_for_choice({}));
        QVERIFY(none.ok());
        QCOMPARE(match_kind(none.value(), ""), 1);
        QCOMPARE(match_kind(none.value(), "x"), -1);
    }

    void class_and_literal_escaping() {
        std::vector<CpRange> ranges = {{0, 0x1F}, {'"', '"'}, {'-', '-'}, {'[', '^'}, {0x7F, 0xA0}, {0x1F600, 0x1F600}};
        auto g = compile_gbnf("root ::= " + gbnf_class(ranges) + "+ " + gbnf_literal(std::string("\x01\x7F\"\\", 4)));
        QVERIFY2(g.ok(), g.status().message.c_str());
        QCOMPARE(match_kind(g.value(), std::string("\x00\x1F\"-[\\]^\x7F\xC2\xA0\xF0\x9F\x98\x80\x01\x7F\"\\", 19)), 1);
        QCOMPARE(match_kind(g.value(), "a"), -1);
    }
};

QTEST_GUILESS_MAIN(TstRegexToGbnf)
#include "tst_regex_to_gbnf.moc"
