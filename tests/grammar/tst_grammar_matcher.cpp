// engine/grammar: GrammarMatcher's token masks against brute force (accepting each token's bytes from the same
// history) at every step of random walks over a small vocabulary with UTF-8 split across tokens, cached vs
// uncached masks, EOS only where the grammar can end, partial code points, termination and table compaction.
#include <QtTest>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "grammar_test_util.h"

using namespace loradesk;
using namespace loradesk::grammar;

namespace {

constexpr int32_t kEos = 3;

// ~300 tokens: printable ASCII, JSON and arithmetic pieces, UTF-8 cut at every byte, invalid bytes, random joins.
Vocabulary small_vocabulary() {
    Vocabulary v;
    v.token_bytes = {"<s>", "<pad>", "<tool>", "</s>"};  // ids 0-2 special, 3 EOS
    v.special = {1, 1, 1, 1};
    v.eos_ids = {kEos};
    for (int c = 0x20; c < 0x7F; ++c) v.token_bytes.push_back(std::string(1, char(c)));
    for (const char* s : {"\n",           "\t",           "\n  ",
                          "{\"",          "\":",          "\",",
                          "\"}",          "{}",           "[]",
                          "[1",           ", ",           ": ",
                          "true",         "fals",         "e",
                          "null",         "nu",           "ll",
                          "12",           "345",          "-0",
                          ".5",           "e+",           "E-1",
                          "\\n",          "\\\"",         "\\u00",
                          "e9",           "ab",           "abc",
                          "xyz",          "(1",           "+2",
                          ")*",           "*(",           "yz",
                          "aaa",          "x!",           " ",
                          "  ",           "\"a\"",        "\"b\": ",
                          "\xC3",         "\xA9",         "\xC3\xA9",
                          "h\xC3",        "\xA9llo",      "\xE4",
                          "\xB8",         "\xAD",         "\xE4\xB8",
                          "\xB8\xAD",     "\xE4\xB8\xAD", "\xE4\xB8\x80",
                          "\xF0\x9F",     "\x98\x80",     "\xF0\x9F\x98\x80",
                          "\xF0\x9F\x98", "\x80",         "\x81!",
                          "\xFF",         "\xC3\xA0\xC3", "\xED\xA0\x80",
                          "\x00",         "\x1F"}) {
        v.token_bytes.push_back(s[0] == 0 && v.token_bytes.size() > 0 ? std::string(1, '\0') : std::string(s));
    }
    std::mt19937 rng(7);
    std::vector<std::string> pieces(v.token_bytes.begin() + 4, v.token_bytes.end());
    while (v.token_bytes.size() < 300) {
        std::string s = pieces[rng() % pieces.size()] + pieces[rng() % pieces.size()];
        if (rng() % 3 == 0) s += pieces[rng() % pieces.size()];
        v.token_bytes.push_back(s);
    }
    v.token_bytes.push_back("a");  // a duplicate of a single-byte token: both ids must behave alike
    v.token_bytes.push_back("");   // an empty token is never allowed
    v.special.resize(v.token_bytes.size(), 0);
    return v;
}

bool bit(const std::vector<uint32_t>& w, std::size_t id) { return (w[id / 32] >> (id % 32)) & 1; }

struct Walk {
    std::string text;
    bool ended = false;
};

}  // namespace

class TstGrammarMatcher : public QObject {
    Q_OBJECT
  private:
    std::shared_ptr<const TokenIndex> m_index = build_token_index(small_vocabulary());

    std::shared_ptr<const CompiledGrammar> compile(std::string_view text) {
        auto g = compile_gbnf(text);
        if (!g.ok()) qFatal("%s", g.status().message.c_str());
        return g.value();
    }

    // Mask at the current point vs brute force: every token's bytes accepted after the same history.
    Walk random_walk(const std::shared_ptr<const CompiledGrammar>& g, uint32_t seed, int max_steps, int eos_after = 4) {
        const auto& vocab = m_index->vocab();
        GrammarMatcher m(g, m_index), oracle(g, m_index);
        std::mt19937 rng(seed);
        Walk walk;
        std::vector<uint32_t> mask(m_index->n_words()), uncached(m_index->n_words());
        for (int step = 0; step < max_steps; ++step) {
            m.fill_next_token_bitmask(mask);
            GrammarMatcher fresh(g, m_index);  // shared cache from another matcher
            if (!fresh.accept_bytes(walk.text)) qFatal("history rejected");
            fresh.compute_mask_uncached(uncached);
            if (mask != uncached) qFatal("cached and uncached masks differ at step %d", step);
            fresh.compute_mask_full_walk(uncached);
            if (mask != uncached) qFatal("frame-decomposed and full-walk masks differ at step %d", step);
            std::vector<int32_t> allowed;
            bool any_token = false;
            for (std::size_t id = 0; id < vocab.token_bytes.size(); ++id) {
                bool expect = false;
                if (int32_t(id) == kEos) {
                    expect = m.can_end();
                } else if (!vocab.special[id] && !vocab.token_bytes[id].empty()) {
                    oracle.reset();
                    expect = oracle.accept_bytes(walk.text + vocab.token_bytes[id]);
                    any_token |= expect;
                }
                if (int32_t(id) == kEos && !any_token) continue;  // checked below, once any_token is known
                if (bit(mask, id) != expect)
                    qFatal("step %d token %zu '%s': mask %d brute force %d (after '%s')", step, id,
                           vocab.token_bytes[id].c_str(), int(bit(mask, id)), int(expect), walk.text.c_str());
                if (expect) allowed.push_back(int32_t(id));
            }
            // EOS: set exactly when the grammar can end, or as the only bit when no token fits at all.
            if (bit(mask, kEos) != (m.can_end() || !any_token)) qFatal("EOS bit wrong at step %d", step);
            if (bit(mask, kEos) && !m.can_end()) {
                if (m.accept_token(kEos)) qFatal("EOS accepted where the grammar cannot end");
                break;  // the vocabulary cannot continue this grammar
            }
            if (allowed.empty() || (bit(mask, kEos) && step >= eos_after && rng() % 4 == 0)) {
                if (!m.accept_token(kEos) || !m.is_terminated()) qFatal("EOS not accepted where allowed");
                walk.ended = true;
                break;
            }
            int32_t id = allowed[rng() % allowed.size()];
            if (!m.accept_token(id)) qFatal("allowed token %d not accepted", id);
            walk.text += vocab.token_bytes[std::size_t(id)];
        }
        return walk;
    }

  private slots:
    void masks_match_brute_force_data() {
        QTest::addColumn<QString>("gbnf");
        auto row = [](const char* name, std::string_view g) {
            QTest::newRow(name) << QString::fromUtf8(g.data(), qsizetype(g.size()));
        };
        row("json", test::kJsonGbnf);
        row("arithmetic",
            "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\n"
            "factor ::= [0-9]+ | \"(\" expr \")\" | \"-\" factor");
        row("repetition bounds", "root ::= [a-c]{2,5} \"-\" \"x\"{3} (\"yz\"){0,2} [0-9]{,3}");
        row("unicode classes",
            "root ::= [\\u00e0-\\u00ff\\u4e00-\\u4e0f]+ (\"!\" | [\\U0001F600-\\U0001F60F])* \"h\\u00e9llo\"?");
        row("nullable rules", "root ::= a b c (a b)*\na ::= \"x\"?\nb ::= (\"y\" | \"\")*\nc ::= \"z\"? | b");
        row("any char", "root ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" .)* \"\\\"\" .?");
    }
    void masks_match_brute_force() {
        QFETCH(QString, gbnf);
        auto g = compile(gbnf.toStdString());
        int n_ended = 0;
        std::size_t total = 0;
        for (uint32_t seed = 1; seed <= 12; ++seed) {
            Walk w = random_walk(g, seed, 40);
            n_ended += w.ended;
            total += w.text.size();
        }
        QVERIFY(total > 12 * 3);  // the walks went somewhere
        QVERIFY(n_ended > 0);
    }

    void json_walks_produce_json() {
        auto g = compile(test::kJsonGbnf);
        int parsed = 0;
        std::size_t longest = 0;
        for (uint32_t seed = 100; seed < 130; ++seed) {
            Walk w = random_walk(g, seed, 80, 30);
            if (!w.ended) continue;
            // Huge exponents are valid JSON text but overflow nlohmann's doubles: shrink them first.
            std::string text = std::regex_replace(w.text, std::regex("[eE][-+]?[0-9]+"), "e0");
            QVERIFY2(nlohmann::json::accept(text), w.text.c_str());
            ++parsed;
            longest = std::max(longest, w.text.size());
        }
        QVERIFY(longest > 40);
        QVERIFY(parsed > 0);
    }

    void copies_are_independent() {
        // The brief's literal brute force: copy the matcher, accept the token, is the copy still viable?
        auto g = compile("root ::= \"h\\u00e9\" [a-z]* \"\\u4e2d\"");
        GrammarMatcher m(g, m_index);
        QVERIFY(m.accept_bytes("h"));
        std::vector<uint32_t> mask(m_index->n_words());
        m.fill_next_token_bitmask(mask);
        for (std::size_t id = 0; id < m_index->vocab_size(); ++id) {
            GrammarMatcher copy = m;
            bool ok = copy.accept_token(int32_t(id));
            QCOMPARE(bit(mask, id), ok);
        }
    }

    void partial_utf8_across_tokens() {
        auto g = compile("root ::= \"\\u00e9\\u4e2d\"");
        const auto& v = m_index->vocab();
        auto id_of = [&](std::string_view s) {
            for (std::size_t i = 0; i < v.token_bytes.size(); ++i)
                if (v.token_bytes[i] == s) return int32_t(i);
            return int32_t(-1);
        };
        GrammarMatcher m(g, m_index);
        std::vector<uint32_t> mask(m_index->n_words());
        m.fill_next_token_bitmask(mask);
        QVERIFY(bit(mask, std::size_t(id_of("\xC3"))));
        QVERIFY(bit(mask, std::size_t(id_of("\xC3\xA9"))));
        QVERIFY(!bit(mask, std::size_t(id_of("\xA9"))));
        QVERIFY(m.accept_token(id_of("\xC3")));
        QVERIFY(!m.can_end());
        m.fill_next_token_bitmask(mask);
        QVERIFY(bit(mask, std::size_t(id_of("\xA9"))));
        QVERIFY(!bit(mask, std::size_t(id_of("\xC3"))));
        QVERIFY(m.accept_token(id_of("\xA9")));
        QVERIFY(m.accept_token(id_of("\xE4\xB8")));
        QVERIFY(!m.accept_token(id_of("\xB8\xAD")));  // rejected: state unchanged
        QVERIFY(m.accept_token(id_of("\xAD")));
        QVERIFY(m.can_end());
        QVERIFY(m.is_terminated());
    }

    void eos_and_termination() {
        auto g = compile("root ::= \"a\"+");
        GrammarMatcher m(g, m_index);
        QVERIFY(!m.accept_token(kEos));  // nothing matched yet
        QVERIFY(!m.accept_token(0));     // special
        QVERIFY(!m.accept_token(-1));
        QVERIFY(!m.accept_token(int32_t(m_index->vocab_size())));
        QVERIFY(!m.accept_token(int32_t(m_index->vocab_size() - 1)));  // empty token
        QVERIFY(m.accept_bytes("aa"));
        QVERIFY(m.can_end());
        QVERIFY(!m.is_terminated());  // more a's may follow
        QVERIFY(m.accept_token(kEos));
        QVERIFY(m.is_terminated());
        QVERIFY(!m.accept_bytes("a"));
        m.reset();
        QVERIFY(!m.can_end());
        QVERIFY(m.accept_bytes("a"));

        auto fixed = compile("root ::= \"ab\"");
        GrammarMatcher f(fixed, m_index);
        QVERIFY(f.accept_bytes("ab"));
        QVERIFY(f.is_terminated());  // nothing can follow
        std::vector<uint32_t> mask(m_index->n_words());
        f.fill_next_token_bitmask(mask);
        for (std::size_t id = 0; id < m_index->vocab_size(); ++id) QCOMPARE(bit(mask, id), int32_t(id) == kEos);
    }

    void no_fitting_token_leaves_only_eos() {
        auto g = compile("root ::= \"\\U0010FFFF\"");  // no token starts with F4 8F
        GrammarMatcher m(g, m_index);
        std::vector<uint32_t> mask(m_index->n_words());
        m.fill_next_token_bitmask(mask);
        for (std::size_t id = 0; id < m_index->vocab_size(); ++id) QCOMPARE(bit(mask, id), int32_t(id) == kEos);
        QVERIFY(!m.accept_token(kEos));
    }

    void compaction_keeps_state() {
        // Each position of a long bounded repetition is its own DFA state; accepting byte by byte goes past the
        // matcher's table limit and forces a rebuild that must keep the current state.
        auto g = compile("root ::= [a-z]{10000} [0-9]{0,10000} \"!\"");
        GrammarMatcher m(g, m_index);
        for (int i = 0; i < 10000; ++i) QVERIFY(m.accept_bytes("q"));
        for (int i = 0; i < 9999; ++i) QVERIFY(m.accept_bytes("7"));
        std::vector<uint32_t> mask(m_index->n_words()), expect(m_index->n_words());
        m.fill_next_token_bitmask(mask);
        m.compute_mask_full_walk(expect);
        QCOMPARE(mask, expect);
        QVERIFY(m.accept_bytes("7"));
        QVERIFY(!m.accept_bytes("7"));
        QVERIFY(m.accept_bytes("!"));
        QVERIFY(m.is_terminated());
        m.reset();
        QVERIFY(!m.accept_bytes("zz!"));
        QVERIFY(m.accept_bytes(std::string(10000, 'z') + "!"));
    }

    void threads_share_grammar_and_caches() {
        // One grammar and one index (with its shared caches) under four threads, each with its own matcher: every
        // mask must equal the full trie walk, whichever thread filled the caches.
        auto g = compile(test::kJsonGbnf);
        auto index = build_token_index(small_vocabulary());
        std::atomic<int> failures{0};
        std::vector<std::thread> threads;
        for (uint32_t t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                std::mt19937 rng(t + 1);
                std::vector<uint32_t> mask(index->n_words()), full(index->n_words());
                for (int walk = 0; walk < 20; ++walk) {
                    GrammarMatcher m(g, index);
                    for (int step = 0; step < 30; ++step) {
                        m.fill_next_token_bitmask(mask);
                        m.compute_mask_full_walk(full);
                        if (mask != full) ++failures;
                        std::vector<int32_t> allowed;
                        for (std::size_t id = 0; id < index->vocab_size(); ++id)
                            if (bit(mask, id) && int32_t(id) != kEos) allowed.push_back(int32_t(id));
                        if (allowed.empty() || !m.accept_token(allowed[rng() % allowed.size()])) break;
                    }
                }
            });
        for (auto& th : threads) th.join();
        QCOMPARE(failures.load(), 0);
        QVERIFY(index->mask_cache().size() > 0);
        QVERIFY(index->frame_cache().size() > 0);
    }

    void mask_cache_is_shared_and_bounded() {
        MaskCache cache(3000);
        auto mask = std::make_shared<TokenMask>(100, 7u);
        cache.insert(1, "a", mask);
        QVERIFY(cache.find(1, "a"));
        QVERIFY(!cache.find(2, "a"));  // another grammar
        for (int i = 0; i < 20; ++i) cache.insert(1, std::to_string(i), mask);
        QVERIFY(cache.size() < 10);
        QVERIFY(!cache.find(1, "a"));
    }
};

QTEST_GUILESS_MAIN(TstGrammarMatcher)
#include "tst_grammar_matcher.moc"
