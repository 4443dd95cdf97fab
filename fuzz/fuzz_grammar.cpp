// libFuzzer target: engine/grammar. Byte 0 picks the front end (GBNF text, or a regex through regex_to_gbnf); a
// grammar that compiles then drives a GrammarMatcher over a small vocabulary (UTF-8 cut across tokens), taking
// tokens from its own masks, and checks the invariants: the cached mask equals the full trie walk, every allowed
// token is accepted, EOS appears exactly when the grammar can end (or when nothing else fits).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "grammar/grammar.h"

namespace {

using namespace loradesk::grammar;

constexpr std::size_t kMaxInput = 4096;
constexpr int32_t kEos = 0;

std::shared_ptr<const TokenIndex> vocabulary() {
    Vocabulary v;
    v.token_bytes = {"</s>", "<s>"};
    v.special = {1, 1};
    v.eos_ids = {kEos};
    for (int c = 0; c < 128; ++c) v.token_bytes.push_back(std::string(1, char(c)));
    for (const char* s : {"{\"",
                          "\":",
                          "\",",
                          "ab",
                          "abc",
                          "12",
                          " the",
                          "\xC3",
                          "\xA9",
                          "\xC3\xA9",
                          "\xE4\xB8",
                          "\xAD",
                          "\xF0\x9F\x98\x80",
                          "\xF0\x9F",
                          "\x98\x80",
                          "\xFF",
                          "true",
                          "null",
                          "\\n",
                          "  "})
        v.token_bytes.push_back(s);
    v.special.resize(v.token_bytes.size(), 0);
    return build_token_index(std::move(v));
}

bool bit(const std::vector<uint32_t>& w, std::size_t id) { return (w[id / 32] >> (id % 32)) & 1; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 1 || size > kMaxInput) return -1;
    static const auto index = vocabulary();
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::string gbnf = text;
    if (data[0] & 1) {
        auto converted = regex_to_gbnf(text);
        if (!converted.ok()) return 0;
        gbnf = converted.value();
    }
    auto compiled = compile_gbnf(gbnf);
    if (!compiled.ok()) {
        FUZZ_CHECK(!compiled.status().message.empty());
        return 0;
    }
    GrammarMatcher m(compiled.value(), index);
    std::vector<uint32_t> mask(index->n_words()), full(index->n_words());
    uint32_t choice = data[0];
    for (int step = 0; step < 24; ++step) {
        m.fill_next_token_bitmask(mask);
        m.compute_mask_full_walk(full);
        FUZZ_CHECK(mask == full);
        std::vector<int32_t> allowed;
        for (std::size_t id = 1; id < index->vocab_size(); ++id)
            if (bit(mask, id)) allowed.push_back(int32_t(id));
        FUZZ_CHECK(bit(mask, kEos) == (m.can_end() || allowed.empty()));
        if (allowed.empty()) break;
        choice = choice * 1103515245u + 12345u;
        const int32_t id = allowed[(choice >> 8) % allowed.size()];
        GrammarMatcher copy = m;
        FUZZ_CHECK(copy.accept_bytes(index->vocab().token_bytes[std::size_t(id)]));
        FUZZ_CHECK(m.accept_token(id));
    }
    if (m.can_end()) FUZZ_CHECK(m.accept_token(kEos) && m.is_terminated());
    return 0;
}
