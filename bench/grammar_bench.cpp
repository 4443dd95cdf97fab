// grammar_bench: allowed-token mask cost for a JSON grammar over a synthetic Qwen-size (~150k token) vocabulary,
// in four states (start, inside a string, after a key, inside a number): cold (fresh matcher, empty caches), new
// context (fresh matcher, frame cache warm, mask cache cold: a state first seen in another request or nesting
// depth), full walk (the whole trie from the state, DFA warm) and cached (mask cache hit). Checks each mask
// before timing; the in-run baseline is the naive mask (every token's bytes tried on its own).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar_cache.h"
#include "grammar/grammar_matcher.h"
#include "grammar_test_util.h"

using namespace loradesk::grammar;

namespace {

// Thread CPU time: the build machine is shared, and wall time mostly measures the neighbours.
double now_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

template <class F>
double median_us(F&& f, int reps) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        double a = now_us();
        f();
        t.push_back(now_us() - a);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void append_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F)), s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    }
}

// Byte-level-BPE-like: all bytes, pseudo-English words with and without a leading space and capitalised, JSON
// punctuation runs, digit runs, whitespace runs, CJK and accented text, emoji and cut multi-byte sequences.
Vocabulary synthetic_vocabulary(std::size_t target) {
    std::set<std::string> seen;
    Vocabulary v;
    auto add = [&](std::string s) {
        if (!s.empty() && seen.insert(s).second) v.token_bytes.push_back(std::move(s));
    };
    for (int b = 0; b < 256; ++b) add(std::string(1, char(b)));
    const char* punct = "{}[]\":, \n";
    for (const char* a = punct; *a; ++a)
        for (const char* b = punct; *b; ++b) {
            add(std::string{*a, *b});
            for (const char* c = punct; *c; ++c) add(std::string{*a, *b, *c});
        }
    for (int n = 0; n < 1000; ++n) add(std::to_string(n)), add(std::string(n < 100 ? "0" : "") + std::to_string(n));
    for (int n = 1; n <= 32; ++n) add(std::string(std::size_t(n), ' ')), add("\n" + std::string(std::size_t(n), ' '));
    std::mt19937 rng(42);
    for (int i = 0; i < 6000; ++i) {  // CJK, accented Latin, emoji, cut sequences
        std::string s;
        append_utf8(s, 0x4E00 + rng() % 0x5000);
        add(s);
        if (i % 3 == 0) add(s.substr(0, 2)), add(s.substr(1));
        std::string a = " caf";
        append_utf8(a, 0xE0 + rng() % 0x20);
        add(a);
        std::string e;
        append_utf8(e, 0x1F300 + rng() % 0x300);
        add(e);
    }
    const char* onsets[] = {"",  "b", "c", "d",  "f",  "g",  "h",  "j",  "k",  "l",  "m",  "n",  "p",  "r",  "s",
                            "t", "v", "w", "st", "tr", "pr", "ch", "sh", "th", "bl", "gr", "qu", "sp", "cl", "fr"};
    const char* vowels[] = {"a", "e", "i", "o", "u", "ou", "ea", "io", "ai", "ee", "y"};
    const char* codas[] = {"", "n", "r", "s", "t", "l", "nd", "ng", "st", "ck", "rt", "m", "x", "ed", "ing", "tion"};
    while (v.token_bytes.size() < target) {
        std::string w;
        for (std::size_t n = 1 + rng() % 3; n > 0; --n) {
            w += onsets[rng() % std::size(onsets)];
            w += vowels[rng() % std::size(vowels)];
            w += codas[rng() % std::size(codas)];
        }
        switch (rng() % 6) {
            case 0:
                add(w);
                break;
            case 1:
                add(" " + w);
                break;
            case 2:
                w[0] = char(std::toupper(w[0])), add(" " + w);
                break;
            case 3:
                add("\"" + w + "\":");
                break;
            case 4:
                add(w + "\",");
                break;
            default:
                add(" " + w);
                add("_" + w);
                break;
        }
    }
    v.special.assign(v.token_bytes.size(), 0);
    for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        v.token_bytes.push_back(s);
        v.special.push_back(1);
    }
    v.eos_ids = {int32_t(v.token_bytes.size() - 1), int32_t(v.token_bytes.size() - 3)};
    return v;
}

bool bit(const std::vector<uint32_t>& w, std::size_t id) { return (w[id / 32] >> (id % 32)) & 1; }

int32_t find_token(const Vocabulary& v, std::string_view s) {
    for (std::size_t i = 0; i < v.token_bytes.size(); ++i)
        if (v.token_bytes[i] == s) return int32_t(i);
    return -1;
}

}  // namespace

int main() {
    Vocabulary synthetic = synthetic_vocabulary(150000);
    double t0 = now_us();
    auto index = build_token_index(std::move(synthetic));
    double index_us = now_us() - t0;
    const auto& vocab = index->vocab();
    t0 = now_us();
    auto compiled = compile_gbnf(test::kJsonGbnf);
    double compile_us = now_us() - t0;
    if (!compiled.ok()) {
        std::fprintf(stderr, "%s\n", compiled.status().message.c_str());
        return 1;
    }
    auto g = compiled.value();
    std::printf("vocabulary %zu tokens, %zu trie nodes; index build %.1f ms; JSON grammar compile %.0f us\n",
                vocab.token_bytes.size(), index->trie().byte.size(), index_us / 1e3, compile_us);

    struct Case {
        const char* name;
        std::string prefix;
        const char* allowed;
        const char* rejected;
    };
    const Case cases[] = {
        {"start", "", "{", "a"},
        {"inside string", "{\"na", "x", "\n"},
        {"after key", "{\"name\"", ":", "a"},
        {"inside number", "{\"a\": 12", "345", "a"},
    };
    std::printf("%-14s %7s %9s %11s %11s %10s %10s %10s\n", "state", "allowed", "cold us", "new-ctx us", "full-walk us",
                "cached us", "naive us", "naive/new");
    std::vector<uint32_t> mask(index->n_words()), check(index->n_words());
    for (const Case& c : cases) {
        // Correctness first: the mask equals the naive one and contains / excludes the expected tokens.
        GrammarMatcher m(g, index);
        if (!m.accept_bytes(c.prefix)) return std::fprintf(stderr, "prefix rejected\n"), 1;
        index->mask_cache().clear();
        index->frame_cache().clear();
        double a = now_us();
        m.fill_next_token_bitmask(mask);
        double cold = now_us() - a;
        GrammarMatcher oracle(g, index);
        auto naive = [&] {
            std::fill(check.begin(), check.end(), 0u);
            for (std::size_t id = 0; id < vocab.token_bytes.size(); ++id) {
                if (!index->is_grammar_token(int32_t(id))) continue;
                oracle.reset();
                if (oracle.accept_bytes(c.prefix) && oracle.accept_bytes(vocab.token_bytes[id]))
                    check[id / 32] |= 1u << (id % 32);
            }
            if (m.can_end())
                for (int32_t e : vocab.eos_ids) check[std::size_t(e) / 32] |= 1u << (e % 32);
        };
        naive();
        if (mask != check) return std::fprintf(stderr, "%s: mask differs from the naive one\n", c.name), 1;
        int32_t yes = find_token(vocab, c.allowed), no = find_token(vocab, c.rejected);
        if (yes < 0 || no < 0 || !bit(mask, std::size_t(yes)) || bit(mask, std::size_t(no)))
            return std::fprintf(stderr, "%s: unexpected mask\n", c.name), 1;
        std::size_t allowed = 0;
        for (uint32_t w : mask) allowed += std::size_t(__builtin_popcount(w));

        // A state not seen before whose frames are known (another request, another nesting depth): frame cache
        // warm, mask cache cold, a fresh matcher each time.
        double new_ctx = median_us(
            [&] {
                GrammarMatcher fresh(g, index);
                fresh.accept_bytes(c.prefix);
                fresh.compute_mask_uncached(mask);
            },
            21);
        double fresh_only = median_us(
            [&] {
                GrammarMatcher fresh(g, index);
                fresh.accept_bytes(c.prefix);
            },
            21);
        if (mask != check) return std::fprintf(stderr, "%s: frame mask differs from the naive one\n", c.name), 1;
        double full = median_us([&] { m.compute_mask_full_walk(mask); }, 11);
        if (mask != check) return std::fprintf(stderr, "%s: full walk differs from the naive one\n", c.name), 1;
        double cached = median_us([&] { m.fill_next_token_bitmask(mask); }, 201);
        double naive_us = median_us(naive, 3);
        const double nc = std::max(1.0, new_ctx - fresh_only);
        std::printf("%-14s %7zu %9.0f %11.0f %11.0f %10.1f %10.0f %9.0fx\n", c.name, allowed, cold, nc, full, cached,
                    naive_us, naive_us / nc);
    }

    // A whole constrained generation: per-token cost of mask + accept along a JSON document, shared cache warm
    // from the first pass (what a batch of similar requests sees).
    const std::string doc =
        "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"tags\": [\"math\", \"poetry\"], \"ok\": true, \"x\": -1.5e3}";
    for (int pass = 0; pass < 2; ++pass) {
        GrammarMatcher m(g, index);
        double a = now_us();
        std::size_t n = 0;
        for (char ch : doc) {
            m.fill_next_token_bitmask(mask);
            int32_t id = find_token(vocab, std::string(1, ch));
            if (!bit(mask, std::size_t(id)) || !m.accept_token(id)) return std::fprintf(stderr, "doc rejected\n"), 1;
            ++n;
        }
        if (!m.can_end()) return std::fprintf(stderr, "doc incomplete\n"), 1;
        std::printf("JSON document, one byte per token, %s: %.1f us per token (mask + accept)\n",
                    pass == 0 ? "fresh caches" : "shared cache warm", (now_us() - a) / double(n));
    }
    GrammarCache cache;
    t0 = now_us();
    for (int i = 0; i < 1000; ++i) (void)cache.get_or_compile(test::kJsonGbnf);
    std::printf("grammar cache hit: %.2f us\n", (now_us() - t0) / 1000);
    return 0;
}
