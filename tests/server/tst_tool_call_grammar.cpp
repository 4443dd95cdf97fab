// Enforced tool_choice: for every tool-call format, random sentences of the tool-call grammar (random walks over a
// byte vocabulary that close within a budget, as the sampler's budget rule does) parse back, with that format's
// parser, as calls of offered tools whose arguments follow the tool's schema; a named function gives exactly that
// one call; parallel_tool_calls false gives one call; schemas that cannot be enforced and unknown names are 400s.
#include <QtTest>
#include <nlohmann/json.hpp>
#include <random>

#include "grammar/grammar_matcher.h"
#include "server/api_error.h"
#include "server/tool_call_grammar.h"
#include "server/tool_call_parser.h"

using namespace loradesk;
using namespace loradesk::server;
using ojson = nlohmann::ordered_json;

namespace {

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer", "minimum": 1, "maximum": 7},
                   "unit": {"enum": ["c", "f"]}}, "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
])");

std::shared_ptr<const grammar::TokenIndex> byte_index() {
    grammar::Vocabulary v;
    for (int b = 0; b < 256; ++b) v.token_bytes.emplace_back(1, char(b));
    v.special.assign(256, 0);
    v.token_bytes.emplace_back();
    v.special.push_back(1);
    v.eos_ids = {256};
    return grammar::build_token_index(std::move(v));
}

// A random sentence: random allowed bytes, then (past `wander` bytes) the bytes that bring the end nearest.
std::string random_sentence(const std::string& gbnf, std::mt19937& rng, int wander) {
    static const auto index = byte_index();
    auto compiled = grammar::compile_gbnf(gbnf);
    if (!compiled.ok()) qFatal("grammar: %s\n%s", compiled.status().message.c_str(), gbnf.c_str());
    grammar::GrammarMatcher m(compiled.value(), index);
    std::string out;
    std::vector<uint32_t> words(index->n_words());
    for (int step = 0; step < 4000; ++step) {
        m.fill_next_token_bitmask(words);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < 257; ++id)
            if (words[std::size_t(id) / 32] >> (id % 32) & 1u) allowed.push_back(id);
        if (allowed.empty()) qFatal("empty mask after %s", out.c_str());
        const bool eos = allowed.back() == 256;
        if (eos && (step > wander || rng() % 8 == 0)) return out;
        int32_t pick = allowed[rng() % allowed.size()];
        if (step > wander) {
            uint32_t best = UINT32_MAX;
            for (int32_t id : allowed)
                if (id != 256 && m.min_bytes_after(id) < best) best = m.min_bytes_after(id), pick = id;
        }
        if (pick == 256) return out;
        if (!m.accept_token(pick)) qFatal("the mask allowed a byte the grammar refuses after %s", out.c_str());
        out += char(pick);
    }
    qFatal("no end: %s", out.c_str());
}

}  // namespace

class TstToolCallGrammar : public QObject {
    Q_OBJECT
  private slots:
    void sentences_parse_back_as_valid_calls() {
        std::mt19937 rng(3);
        for (ToolCallFormat f : {ToolCallFormat::hermes, ToolCallFormat::llama3_json, ToolCallFormat::mistral,
                                 ToolCallFormat::mistral_v11, ToolCallFormat::qwen3_coder}) {
            for (const char* only : {"", "weather"}) {
                for (bool parallel : {true, false}) {
                    ToolChoiceGrammar choice;
                    choice.only = only;
                    choice.parallel = parallel;
                    const std::string g = tool_call_grammar(tool_call_syntax(f), kTools, choice);
                    for (int i = 0; i < 25; ++i) {
                        const std::string text = random_sentence(g, rng, int(rng() % 200));
                        ToolCallParser p(f, kTools);
                        ToolParseDelta d;
                        p.feed(text, d);
                        p.finish(d);
                        const std::string what = std::string(tool_call_format_name(f)) + ": " + text;
                        QVERIFY2(!d.calls.empty(), what.c_str());
                        QVERIFY2(d.content.find_first_not_of(" \n\t\r") == std::string::npos, what.c_str());
                        if (*only || !parallel) QVERIFY2(d.calls.size() == 1, what.c_str());
                        for (const ParsedToolCall& c : d.calls) {
                            if (*only) QCOMPARE(c.name, std::string(only));
                            QVERIFY2(c.name == "weather" || c.name == "now", what.c_str());
                            const ojson args = ojson::parse(c.arguments);
                            if (c.name != "weather") continue;
                            QVERIFY2(args["city"].is_string() &&
                                         QString::fromStdString(args["city"].get<std::string>()).toUcs4().size() <= 12,
                                     what.c_str());
                            QVERIFY2(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7,
                                     what.c_str());
                            if (args.contains("unit"))
                                QVERIFY2(args["unit"] == "c" || args["unit"] == "f", what.c_str());
                        }
                    }
                }
            }
        }
    }
    void refusals() {
        ToolChoiceGrammar choice;
        choice.only = "missing";
        try {
            tool_call_grammar(tool_call_syntax(ToolCallFormat::hermes), kTools, choice);
            QFAIL("an unknown function was accepted");
        } catch (const ApiError& e) {
            QCOMPARE(e.param, std::string("tool_choice"));
        }
        const ojson bad = ojson::parse(
            R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "not": {}}}}])");
        try {
            tool_call_grammar(tool_call_syntax(ToolCallFormat::hermes), bad, ToolChoiceGrammar{});
            QFAIL("an unenforceable schema was accepted");
        } catch (const ApiError& e) {
            QCOMPARE(e.param, std::string("tools"));
            QVERIFY2(std::string(e.what()).find("'not'") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TstToolCallGrammar)
#include "tst_tool_call_grammar.moc"
