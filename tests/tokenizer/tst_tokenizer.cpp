// engine/tokenizer unit tests on small hand-written tokenizer.json files: split behaviours, normalizers,
// BPE options (both merge encodings, ignore_merges, byte_fallback, unk/fuse_unk, subword prefix), added
// token flags, Metaspace, decoders, malformed files, invalid UTF-8, streaming and stop strings.
// Exact parity on real tokenizers is checked by tests/js/tokenizer_oracle.mjs. (No raw string literals
// here: moc cannot parse them.)
#include <QtTest>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"

using namespace loradesk;
using namespace loradesk::tokenizer;
using nlohmann::json;

namespace {

// A byte-fallback BPE over a few letters, with every <0xNN> token.
json small_bpe(json extra_model = json::object()) {
    json vocab = {{"<unk>", 0},
                  {"<s>", 1},
                  {"</s>", 2},
                  {"a", 3},
                  {"b", 4},
                  {"c", 5},
                  {"ab", 6},
                  {"abc", 7},
                  {"bc", 8},
                  {"\xE2\x96\x81", 9},
                  {"\xE2\x96\x81"
                   "a",
                   10}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 100 + b;
    }
    json model = {{"type", "BPE"},
                  {"vocab", vocab},
                  {"merges", json::array({"a b", json::array({"ab", "c"}), "\xE2\x96\x81 a"})},
                  {"unk_token", "<unk>"},
                  {"fuse_unk", true},
                  {"byte_fallback", false}};
    for (auto& [k, v] : extra_model.items()) model[k] = v;
    return {{"version", "1.0"}, {"model", model}, {"added_tokens", json::array()}};
}

std::shared_ptr<Tokenizer> make(const json& tok, const json& config = json::object()) {
    return Tokenizer::from_json_text(tok.dump(), config.dump());
}

QList<int> ids(const std::vector<int32_t>& v) { return QList<int>(v.begin(), v.end()); }

// Llama 2's decoder: the Metaspace mark back to a space, byte fallback, fuse, and the first space stripped.
json llama_decoder() {
    return {
        {"type", "Sequence"},
        {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                  {{"type", "ByteFallback"}},
                                  {{"type", "Fuse"}},
                                  {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
}

json added(int id, const std::string& content, json flags = json::object()) {
    json a = {{"id", id},        {"content", content},   {"special", true},    {"lstrip", false},
              {"rstrip", false}, {"single_word", false}, {"normalized", false}};
    for (auto& [k, v] : flags.items()) a[k] = v;
    return a;
}

}  // namespace

class TstTokenizer : public QObject {
    Q_OBJECT
  private slots:
    void split_behaviors_data() {
        QTest::addColumn<QString>("behavior");
        QTest::addColumn<bool>("invert");
        QTest::addColumn<QStringList>("pieces");
        QTest::newRow("removed") << "Removed" << false << QStringList{"a", "b", "c"};
        QTest::newRow("isolated") << "Isolated" << false << QStringList{"a", "-", "b", "-", "-", "c"};
        QTest::newRow("merged_prev") << "MergedWithPrevious" << false << QStringList{"a-", "b-", "-", "c"};
        QTest::newRow("merged_next") << "MergedWithNext" << false << QStringList{"a", "-b", "-", "-c"};
        QTest::newRow("contiguous") << "Contiguous" << false << QStringList{"a", "-", "b", "--", "c"};
        QTest::newRow("removed_invert") << "Removed" << true << QStringList{"-", "-", "-"};
        QTest::newRow("merged_prev_invert") << "MergedWithPrevious" << true << QStringList{"a", "-b", "-", "-c"};
    }
    void split_behaviors() {
        QFETCH(QString, behavior);
        QFETCH(bool, invert);
        QFETCH(QStringList, pieces);
        auto pre = PreTokenizer::from_json({{"type", "Split"},
                                            {"pattern", {{"String", "-"}}},
                                            {"behavior", behavior.toStdString()},
                                            {"invert", invert}});
        std::vector<PreToken> out;
        pre.pre_tokenize({"a-b--c", true}, out);
        QStringList got;
        for (auto& p : out) got << QString::fromStdString(p.text);
        QCOMPARE(got, pieces);
    }
    void byte_level_and_digits() {
        auto pre = PreTokenizer::from_json(
            {{"type", "Sequence"},
             {"pretokenizers",
              json::array({{{"type", "Digits"}, {"individual_digits", true}},
                           {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}})}});
        std::vector<PreToken> out;
        pre.pre_tokenize({"hi 42\n", true}, out);
        QStringList got;
        for (auto& p : out) got << QString::fromStdString(p.text);
        // Digits isolate 4 and 2; ByteLevel adds the prefix space per piece and maps ' '->Ġ, '\n'->Ċ.
        QCOMPARE(got, (QStringList{"Ġhi", "Ġ", "Ġ4", "Ġ2", "ĠĊ"}));
    }
    void normalizers_data() {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("output");
        QTest::newRow("nfc") << QByteArray("{\"type\":\"NFC\"}") << QString("e\u0301") << QString("\u00e9");
        QTest::newRow("nfkc") << QByteArray("{\"type\":\"NFKC\"}") << QString("\ufb01\u2460") << QString("fi1");
        QTest::newRow("lowercase") << QByteArray("{\"type\":\"Lowercase\"}") << QString("\u00c0BC\u0416")
                                   << QString("\u00e0bc\u0436");
        QTest::newRow("strip") << QByteArray("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":false}")
                               << QString(" \t x ") << QString("x ");
        QTest::newRow("prepend_seq")
            << QByteArray(
                   "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"▁\"},{\"type\":"
                   "\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"▁\"}]}")
            << QString("a b") << QString("▁a▁b");
        QTest::newRow("replace_regex")
            << QByteArray("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}")
            << QString("a \t\n b") << QString("a b");
        QTest::newRow("prepend_empty") << QByteArray("{\"type\":\"Prepend\",\"prepend\":\"▁\"}") << QString("")
                                       << QString("");
    }
    void normalizers() {
        QFETCH(QByteArray, config);
        QFETCH(QString, input);
        QFETCH(QString, output);
        auto n = Normalizer::from_json(json::parse(config.toStdString()));
        QCOMPARE(QString::fromStdString(n.normalize(input.toStdString())), output);
    }
    void bpe_merges_both_encodings() {
        auto t = make(small_bpe());
        QCOMPARE(ids(t->encode("abc", false)), (QList<int>{7}));
        QCOMPARE(ids(t->encode("abab", false)), (QList<int>{6, 6}));
        QCOMPARE(ids(t->encode("cab", false)), (QList<int>{5, 6}));
    }
    void bpe_ignore_merges() {
        json tok = small_bpe();
        tok["model"]["merges"] = json::array({"b c"});
        QCOMPARE(ids(make(tok)->encode("abc", false)), (QList<int>{3, 8}));
        tok["model"]["ignore_merges"] = true;
        QCOMPARE(ids(make(tok)->encode("abc", false)), (QList<int>{7}));
    }
    void bpe_unknown_and_byte_fallback() {
        QCOMPARE(ids(make(small_bpe())->encode("axyzb", false)), (QList<int>{3, 0, 4}));
        QCOMPARE(ids(make(small_bpe({{"fuse_unk", false}}))->encode("axyzb", false)), (QList<int>{3, 0, 0, 0, 4}));
        // é = C3 A9 becomes two byte tokens.
        QCOMPARE(ids(make(small_bpe({{"byte_fallback", true}}))->encode("a\u00e9", false)),
                 (QList<int>{3, 100 + 0xC3, 100 + 0xA9}));
    }
    void bpe_continuing_subword_prefix() {
        json tok = {{"model",
                     {{"type", "BPE"},
                      {"vocab", {{"a", 0}, {"##b", 1}, {"ab", 2}, {"##c", 3}, {"abc", 4}}},
                      {"merges", json::array({"a ##b", "ab ##c"})},
                      {"continuing_subword_prefix", "##"}}}};
        QCOMPARE(ids(make(tok)->encode("abc", false)), (QList<int>{4}));
        QCOMPARE(ids(make(tok)->encode("ac", false)), (QList<int>{0, 3}));
    }
    void long_word_is_fast_and_exact() {
        auto t = make(small_bpe());
        std::string word;
        for (int i = 0; i < 20000; ++i) word += "abc";
        QElapsedTimer timer;
        timer.start();
        auto v = t->encode(word, false);
        QCOMPARE(qsizetype(v.size()), qsizetype(20000));
        QVERIFY(std::all_of(v.begin(), v.end(), [](int32_t id) { return id == 7; }));
        QVERIFY2(timer.elapsed() < 2000, "merging a 60k-character word must not be quadratic");
    }
    void added_token_flags_data() {
        QTest::addColumn<QByteArray>("flags");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QList<int>>("expected");
        QTest::newRow("plain") << QByteArray("{}") << QString("a <X> b") << QList<int>{3, 0, 50, 0, 4};
        QTest::newRow("lstrip") << QByteArray("{\"lstrip\":true}") << QString("a  <X> b") << QList<int>{3, 50, 0, 4};
        QTest::newRow("rstrip") << QByteArray("{\"rstrip\":true}") << QString("a <X>  b") << QList<int>{3, 0, 50, 4};
        QTest::newRow("single_word_no") << QByteArray("{\"single_word\":true}") << QString("a<X>b")
                                        << QList<int>{3, 0, 4};
        QTest::newRow("single_word_yes") << QByteArray("{\"single_word\":true}") << QString("a <X> b")
                                         << QList<int>{3, 0, 50, 0, 4};
    }
    void added_token_flags() {
        QFETCH(QByteArray, flags);
        QFETCH(QString, text);
        QFETCH(QList<int>, expected);
        json tok = small_bpe();
        tok["added_tokens"] = json::array({added(50, "<X>", json::parse(flags.toStdString()))});
        // Unknown chars (space, '<', '>') fuse into one unk per run.
        QCOMPARE(ids(make(tok)->encode(text.toStdString(), false)), expected);
    }
    void added_tokens_longest_match_and_normalized() {
        json tok = small_bpe();
        tok["normalizer"] = {{"type", "Lowercase"}};
        tok["added_tokens"] = json::array(
            {added(50, "<X>"), added(51, "<X><Y>"), added(52, "ab", {{"normalized", true}, {"special", false}})});
        auto t = make(tok);
        QCOMPARE(ids(t->encode("<X><Y><X>", false)), (QList<int>{51, 50}));
        // "AB" lowercases to "ab", which then matches the normalized added token, not the merge.
        QCOMPARE(ids(t->encode("AB", false)), (QList<int>{52}));
        QVERIFY(t->is_special(50));
        QVERIFY(!t->is_special(52));
    }
    void post_processor_and_config_tokens() {
        json tok = small_bpe();
        tok["added_tokens"] = json::array({added(1, "<s>"), added(2, "</s>")});
        json config = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                       {"eos_token", "</s>"},
                       {"add_bos_token", true},
                       {"add_eos_token", true}};
        auto t = make(tok, config);
        QCOMPARE(ids(t->encode("ab", true)), (QList<int>{1, 6, 2}));
        QCOMPARE(ids(t->encode("ab", false)), (QList<int>{6}));
        QCOMPARE(t->bos_token_id().value_or(-1), 1);
        QCOMPARE(QString::fromStdString(t->eos_token()), QString("</s>"));
        tok["post_processor"] = {{"type", "TemplateProcessing"},
                                 {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                         {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                                 {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
        QCOMPARE(ids(make(tok, config)->encode("ab", true)), (QList<int>{1, 6}));
    }
    void metaspace_prepend_first() {
        json tok = small_bpe();
        tok["pre_tokenizer"] = {
            {"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", true}};
        tok["decoder"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}};
        tok["added_tokens"] = json::array({added(1, "<s>")});
        auto t = make(tok);
        QCOMPARE(ids(t->encode("a a", false)), (QList<int>{10, 10}));
        // After an added token the span does not start the input: no prefix.
        QCOMPARE(ids(t->encode("<s>a a", false)), (QList<int>{1, 3, 10}));
        QCOMPARE(QString::fromStdString(t->decode({10, 10}, false)), QString("a a"));
    }
    void decoders() {
        json tok = small_bpe({{"byte_fallback", true}});
        tok["decoder"] = llama_decoder();
        tok["added_tokens"] = json::array({added(1, "<s>")});
        auto t = make(tok);
        QCOMPARE(QString::fromStdString(t->decode({10, 10, 100 + 0xC3, 100 + 0xA9}, false)), QString("a a\u00e9"));
        // An invalid byte run becomes one U+FFFD per byte, like HF.
        QCOMPARE(QString::fromStdString(t->decode({3, 100 + 0xC3, 100 + 0x41}, false)), QString("a\ufffd\ufffd"));
        QCOMPARE(QString::fromStdString(t->decode({1, 10}, true)), QString("a"));
        QCOMPARE(QString::fromStdString(t->decode({1, 10}, false)), QString("<s> a"));
        QCOMPARE(QString::fromStdString(utf8_lossy("a\xF0\x9F\x98"
                                                   "b\xC0")),
                 QString("a\ufffdb\ufffd"));
    }
    // Token bytes for constrained decoding: raw bytes (a lone UTF-8 lead byte stays itself), the Metaspace mark as
    // a space even first, Strip not applied, added tokens as their content; byte-level tokens map back to bytes.
    void token_bytes() {
        json tok = small_bpe({{"byte_fallback", true}});
        tok["decoder"] = llama_decoder();
        tok["added_tokens"] = json::array({added(1, "<s>")});
        auto t = make(tok);
        QCOMPARE(t->token_bytes(10), std::string(" a"));
        QCOMPARE(t->token_bytes(100 + 0xC3), std::string("\xC3"));
        QCOMPARE(t->token_bytes(7), std::string("abc"));
        QCOMPARE(t->token_bytes(1), std::string("<s>"));
        QCOMPARE(t->token_bytes(99999), std::string());
        // Byte level: every id's bytes, concatenated over an encoding, give back the text exactly.
        json bl = small_bpe();
        bl["model"]["vocab"] = json::object();
        for (int b = 0; b < 256; ++b) bl["model"]["vocab"][byte_to_unicode_table()[std::size_t(b)]] = b;
        bl["model"]["merges"] = json::array();
        bl["model"].erase("unk_token");
        bl["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
        bl["decoder"] = {{"type", "ByteLevel"}};
        auto b = make(bl);
        const std::string text = "{\"k\": \"\xC3\xA9\xE2\x82\xAC\"}\n";
        std::string joined;
        for (int32_t id : b->encode(text, false)) joined += b->token_bytes(id);
        QCOMPARE(joined, text);
        QCOMPARE(b->token_bytes(0xE2), std::string("\xE2"));
    }
    void malformed_files_data() {
        QTest::addColumn<QByteArray>("tokenizer_json");
        QTest::addColumn<QString>("message");
        QTest::newRow("not json") << QByteArray("{nope") << "not valid JSON";
        QTest::newRow("no model") << QByteArray("{}") << "no \"model\"";
        QTest::newRow("wordpiece") << QByteArray("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}")
                                   << "supports BPE tokenizers only";
        QTest::newRow("unigram") << QByteArray("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}")
                                 << "model type 'Unigram' is not supported";
        QTest::newRow("merge oov") << QByteArray(
                                          "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a q\"]}}")
                                   << "missing from the vocab";
        QTest::newRow("bad merge") << QByteArray(
                                          "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"abc\"]}}")
                                   << "two tokens separated";
        QTest::newRow("unk oov") << QByteArray(
                                        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"unk_token\":\"<unk>\"}}")
                                 << "unk_token '<unk>' is not in the vocab";
        QTest::newRow("bad normalizer")
            << QByteArray("{\"normalizer\":{\"type\":\"BertNormalizer\"},\"model\":{\"type\":\"BPE\",\"vocab\":{}}}")
            << "normalizer type 'BertNormalizer' is not supported";
        QTest::newRow("bad regex") << QByteArray(
                                          "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},"
                                          "\"behavior\":\"Isolated\"},\"model\":{\"type\":\"BPE\",\"vocab\":{}}}")
                                   << "does not compile";
        QTest::newRow("bad behavior") << QByteArray(
                                             "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"a\"},"
                                             "\"behavior\":\"Sideways\"},\"model\":{\"type\":\"BPE\",\"vocab\":{}}}")
                                      << "behavior 'Sideways'";
        QTest::newRow("bad vocab id") << QByteArray("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"}}}")
                                      << "needs a non-negative integer id";
    }
    void malformed_files() {
        QFETCH(QByteArray, tokenizer_json);
        QFETCH(QString, message);
        try {
            Tokenizer::from_json_text(tokenizer_json.toStdString(), "");
            QFAIL("loading should have failed");
        } catch (const ExpectedError& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }
    void missing_directory() {
        try {
            Tokenizer::load("/nonexistent/loradesk");
            QFAIL("loading should have failed");
        } catch (const ExpectedError& e) {
            QCOMPARE(e.code(), ErrorCode::not_found);
        }
    }
    void invalid_utf8_input() {
        auto t = make(small_bpe());
        try {
            t->encode("ab\xC3(", false);
            QFAIL("encode should have failed");
        } catch (const ExpectedError& e) {
            QCOMPARE(e.code(), ErrorCode::invalid_argument);
            QVERIFY2(QString(e.what()).contains("offset 2"), e.what());
        }
        // U+FEFF is not whitespace for HF (Rust) even though JavaScript's \s matches it.
        QVERIFY(!is_unicode_whitespace(0xFEFF));
        QVERIFY(is_unicode_whitespace(0x3000));
    }
    void incremental_matches_full_decode() {
        json tok = small_bpe({{"byte_fallback", true}});
        tok["decoder"] = llama_decoder();
        auto t = make(tok);
        // 😀 = F0 9F 98 80 split over four byte tokens, then text, then an invalid run.
        std::vector<int32_t> seq = {10, 100 + 0xF0, 100 + 0x9F, 100 + 0x98, 100 + 0x80, 10, 100 + 0xE4, 3, 9, 10};
        IncrementalDetokenizer d(t, false);
        std::string joined;
        for (int32_t id : seq) {
            std::string delta = d.push(id);
            QVERIFY(find_invalid_utf8(delta) == std::string::npos);
            QVERIFY2(delta.find("\xF0") == std::string::npos || delta.find("\xF0\x9F\x98\x80") != std::string::npos,
                     "emoji must come whole");
            joined += delta;
        }
        joined += d.finish();
        QCOMPARE(QString::fromStdString(joined), QString::fromStdString(t->decode(seq, false)));
    }
    void stop_strings_data() {
        QTest::addColumn<QStringList>("deltas");
        QTest::addColumn<QString>("emitted");
        QTest::addColumn<bool>("stopped");
        QTest::newRow("split stop") << QStringList{"Hello ", "wor", "ld", "STO", "P tail"} << "Hello world" << true;
        QTest::newRow("false start") << QStringList{"ST", "x", "STOP"} << "STx" << true;
        QTest::newRow("no stop") << QStringList{"a", "ST", "O"} << "aSTO" << false;
        QTest::newRow("earliest") << QStringList{"a\n\nbSTOP"} << "a" << true;
    }
    void stop_strings() {
        QFETCH(QStringList, deltas);
        QFETCH(QString, emitted);
        QFETCH(bool, stopped);
        StopStringMatcher m({"STOP", "\n\n"});
        std::string out;
        bool hit = false;
        for (auto& d : deltas) {
            auto r = m.push(d.toStdString());
            out += r.text;
            hit = hit || r.stopped;
        }
        out += m.finish();
        QCOMPARE(QString::fromStdString(out), emitted);
        QCOMPARE(hit, stopped);
    }
    void concurrent_encode() {
        auto t = make(small_bpe({{"byte_fallback", true}}));
        std::string text = "abcab cabc \xE2\x82\xAC abab";
        auto expected = t->encode(text, false);
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int k = 0; k < 4; ++k)
            threads.emplace_back([&] {
                for (int i = 0; i < 500; ++i)
                    if (t->encode(text, false) != expected) ++mismatches;
            });
        for (auto& th : threads) th.join();
        QCOMPARE(mismatches.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TstTokenizer)
#include "tst_tokenizer.moc"
