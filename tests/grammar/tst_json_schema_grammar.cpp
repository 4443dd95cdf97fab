// engine/grammar JSON Schema -> GBNF: documents accepted and rejected by the real matcher over the produced
// grammar (Pydantic, zod and OpenAI strict shapes, recursion, formats, patterns), exact integer and number ranges
// against arithmetic, every unsupported keyword's error, and the guards against hostile schemas.
#include <QtTest>
#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema_grammar.h"
#include "grammar_test_util.h"
#include "json_schema_cases.h"

using namespace loradesk;
using namespace loradesk::grammar;
using grammar::test::match_kind;
using Json = nlohmann::ordered_json;
using namespace loradesk::grammar::test;

namespace {

std::shared_ptr<const CompiledGrammar> compile_schema(const Json& schema, const SchemaGrammarOptions& options = {}) {
    auto text = json_schema_to_gbnf(schema, options);
    if (!text.ok()) qWarning("schema error: %s", text.status().message.c_str());
    if (!text.ok()) return nullptr;
    auto g = compile_gbnf(text.value());
    if (!g.ok()) qWarning("gbnf error: %s\n%s", g.status().message.c_str(), text.value().c_str());
    return g.ok() ? g.value() : nullptr;
}

bool accepts(const std::shared_ptr<const CompiledGrammar>& g, std::string_view doc) { return match_kind(g, doc) == 1; }

std::string error_of(const Json& schema, bool strict = false) {
    auto r = json_schema_to_gbnf(schema, {.strict = strict});
    return r.ok() ? std::string("<no error>") : r.status().message;
}

}  // namespace

class TstJsonSchemaGrammar : public QObject {
    Q_OBJECT
  private slots:
    void documents_data();
    void documents();
    void integer_ranges();
    void number_bounds_data();
    void number_bounds();
    void unsupported_keywords_data();
    void unsupported_keywords();
    void hostile_schemas();
    void prefixed_rules();
    void json_object();
    void compact_whitespace();
    void property_order_from_ordered_json();
};

// moc misreads raw string literals inside macro arguments; it only needs the class above.
#ifndef Q_MOC_RUN

void TstJsonSchemaGrammar::documents_data() {
    QTest::addColumn<QString>("schema");
    QTest::addColumn<QStringList>("good");
    QTest::addColumn<QStringList>("bad");
    QTest::addColumn<bool>("strict");
    add_document_rows();
}

void TstJsonSchemaGrammar::documents() {
    QFETCH(QString, schema);
    QFETCH(QStringList, good);
    QFETCH(QStringList, bad);
    QFETCH(bool, strict);
    const auto g = compile_schema(Json::parse(schema.toStdString()), {.strict = strict});
    QVERIFY(g);
    for (const auto& doc : good) QVERIFY2(accepts(g, doc.toStdString()), qPrintable("rejected: " + doc));
    for (const auto& doc : bad) QVERIFY2(!accepts(g, doc.toStdString()), qPrintable("accepted: " + doc));
}

// For random [lo, hi] (either side sometimes open or exclusive), every integer in windows around both bounds and
// zero is accepted exactly when it is in range.
void TstJsonSchemaGrammar::integer_ranges() {
    std::mt19937_64 rng(18);
    const std::int64_t scales[] = {1, 10, 100, 1000, 100000, 10000000000LL, 1000000000000000000LL};
    for (int round = 0; round < 150; ++round) {
        auto draw = [&] {
            const std::int64_t scale = scales[rng() % std::size(scales)];
            std::int64_t v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(scale));
            return rng() % 2 ? -v : v;
        };
        std::int64_t lo = draw(), hi = draw();
        if (lo > hi) std::swap(lo, hi);
        const bool has_lo = rng() % 8 != 0, has_hi = rng() % 8 != 0;
        const bool excl_lo = rng() % 4 == 0, excl_hi = rng() % 4 == 0;
        Json schema = {{"type", "integer"}};
        if (has_lo) schema[excl_lo ? "exclusiveMinimum" : "minimum"] = lo;
        if (has_hi) schema[excl_hi ? "exclusiveMaximum" : "maximum"] = hi;
        const std::int64_t eff_lo = excl_lo ? lo + 1 : lo, eff_hi = excl_hi ? hi - 1 : hi;
        if (has_lo && has_hi && eff_lo > eff_hi) {
            QVERIFY(error_of(schema).find("no integer") != std::string::npos);
            continue;
        }
        const auto g = compile_schema(schema);
        QVERIFY2(g, schema.dump().c_str());
        for (std::int64_t center : {lo, hi, std::int64_t{0}})
            for (std::int64_t d = -25; d <= 25; ++d) {
                const std::int64_t v = center + d;
                const bool in = (!has_lo || v >= eff_lo) && (!has_hi || v <= eff_hi);
                QVERIFY2(accepts(g, std::to_string(v)) == in,
                         qPrintable(QString::fromStdString(schema.dump() + " value " + std::to_string(v))));
            }
        // "-0" (JSON's negative zero, equal to 0) comes with the negative numbers.
        if (!has_lo || eff_lo < 0) QVERIFY((!has_hi || eff_hi >= 0) == accepts(g, "-0"));
    }
}

void TstJsonSchemaGrammar::number_bounds_data() {
    QTest::addColumn<QString>("schema");
    QTest::addColumn<QStringList>("good");
    QTest::addColumn<QStringList>("bad");
    QTest::addColumn<bool>("strict");
    add_number_rows();
}

void TstJsonSchemaGrammar::number_bounds() { documents(); }

void TstJsonSchemaGrammar::unsupported_keywords_data() {
    QTest::addColumn<QString>("schema");
    QTest::addColumn<QString>("message");
    add_unsupported_rows();
}

void TstJsonSchemaGrammar::unsupported_keywords() {
    QFETCH(QString, schema);
    QFETCH(QString, message);
    const std::string error = error_of(Json::parse(schema.toStdString()));
    QVERIFY2(error.find(message.toStdString()) != std::string::npos, error.c_str());
    auto r = json_schema_to_gbnf(Json::parse(schema.toStdString()));
    QCOMPARE(r.status().code, ErrorCode::invalid_argument);
}

void TstJsonSchemaGrammar::hostile_schemas() {
    Json deep = {{"type", "integer"}};
    for (int i = 0; i < 100; ++i) deep = {{"type", "array"}, {"items", deep}};
    QVERIFY(error_of(deep).find("deeper than 64") != std::string::npos);
    // References that never consume anything would be left recursion.
    QVERIFY(error_of(Json::parse(R"({"$ref":"#"})")).find("refers back to itself") != std::string::npos);
    QVERIFY(error_of(Json::parse(R"({"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"anyOf":[{"$ref":"#/$defs/A"},
        {"type":"null"}]}},"$ref":"#/$defs/A"})"))
                .find("refers back to itself") != std::string::npos);
    Json big_enum = Json::array();
    for (int i = 0; i < 60000; ++i) big_enum.push_back(std::string(20, 'a') + std::to_string(i));
    QVERIFY(error_of(Json{{"enum", big_enum}}).find("exceeds") != std::string::npos);
    QVERIFY(error_of(Json::parse(R"({"type":"string","minLength":1000000000})")).find("above the supported") !=
            std::string::npos);
    // Large maxima only narrow what is generated.
    const auto long_strings = compile_schema(Json::parse(R"({"type":"string","maxLength":1000000000})"));
    QVERIFY(long_strings && accepts(long_strings, std::string("\"").append(10000, 'a').append("\"")));
    QVERIFY(error_of(Json::parse(R"({"type":"integer","minimum":1e300})")).find("beyond") != std::string::npos);
    const Json nested_groups = {{"type", "string"}, {"pattern", std::string(100000, '(')}};
    QVERIFY(error_of(nested_groups).find("groups nest deeper than 100") != std::string::npos);
    // A schema referring to itself through a container is fine.
    QVERIFY(compile_schema(Json::parse(R"({"type":"array","items":{"$ref":"#"}})")));
}

void TstJsonSchemaGrammar::prefixed_rules() {
    const Json schema = Json::parse(R"({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})");
    auto a = json_schema_rules(schema, "fn1-");
    auto b = json_schema_rules(schema, "fn2-");
    QVERIFY(a.ok() && b.ok());
    for (const auto* text : {&a.value(), &b.value()}) {
        std::istringstream lines(*text);
        for (std::string line; std::getline(lines, line);) QVERIFY2(line.starts_with("fn"), line.c_str());
    }
    // Two embedded schemas in one grammar: a tool name picks the arguments grammar.
    const std::string combined = "root ::= \"1:\" fn1-root | \"2:\" fn2-root\n" + a.value() + b.value();
    auto g = compile_gbnf(combined);
    QVERIFY2(g.ok(), g.status().message.c_str());
    QVERIFY(accepts(g.value(), R"(1:{"q":"x"})"));
    QVERIFY(!accepts(g.value(), R"(2:{})"));
    QVERIFY(!json_schema_rules(schema, "bad prefix").ok());
}

void TstJsonSchemaGrammar::json_object() {
    auto g = compile_gbnf(json_object_gbnf());
    QVERIFY2(g.ok(), g.status().message.c_str());
    QVERIFY(accepts(g.value(), R"({"a":[1,{"b":null}],"c":"d"})"));
    QVERIFY(accepts(g.value(), "{ }"));
    QVERIFY(!accepts(g.value(), "[1]"));
    QVERIFY(!accepts(g.value(), "\"x\""));
    // Layout is bounded: 2 newlines and 20 spaces per gap at most.
    // (Layouts built with append: GCC 12 warns falsely about "literal" + std::string.)
    const std::string two_newlines = std::string("{\n\n").append(20, ' ').append("}");
    const std::string wide = std::string("{").append(21, ' ').append("}");
    QVERIFY(accepts(g.value(), two_newlines));
    QVERIFY(!accepts(g.value(), "{\n\n\n}"));
    QVERIFY(!accepts(g.value(), wide));
}

void TstJsonSchemaGrammar::compact_whitespace() {
    const auto g = compile_schema(Json::parse(R"({"type":"object","properties":{"a":{"type":"array"}}})"),
                                  {.any_whitespace = false});
    QVERIFY(g);
    QVERIFY(accepts(g, R"({"a":[1,2]})"));
    QVERIFY(!accepts(g, R"({"a": [1,2]})"));
    QVERIFY(!accepts(g, R"({"a":[1, 2]})"));
}

void TstJsonSchemaGrammar::property_order_from_ordered_json() {
    const char* text = R"({"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"integer"}},
        "required":["z","a"],"additionalProperties":false})";
    const auto ordered = compile_schema(Json::parse(text));
    QVERIFY(accepts(ordered, R"({"z":1,"a":2})"));
    QVERIFY(!accepts(ordered, R"({"a":2,"z":1})"));
    // A plain nlohmann::json has sorted keys already, so the sorted order is the one it can keep.
    auto sorted = json_schema_to_gbnf(nlohmann::json::parse(text));
    QVERIFY(sorted.ok());
    auto g = compile_gbnf(sorted.value());
    QVERIFY(g.ok() && accepts(g.value(), R"({"a":2,"z":1})"));
}

#endif  // Q_MOC_RUN

QTEST_GUILESS_MAIN(TstJsonSchemaGrammar)
#include "tst_json_schema_grammar.moc"
