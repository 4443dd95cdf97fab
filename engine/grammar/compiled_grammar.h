// CompiledGrammar: the byte-level pushdown form that GrammarMatcher runs. Every code-point class has been lowered
// to UTF-8 byte sequences (so a token that ends inside a code point simply leaves the parse in the middle of a
// sequence); rules are alternatives of sequences of {byte class, rule reference}. Immutable after compile_gbnf,
// so it is safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace loradesk::grammar {

// A set of bytes, bit b of word b / 64.
using ByteSet = std::array<uint64_t, 4>;

class CompiledGrammar {
  public:
    // Element encoding: kind in the top two bits, argument (rule or byte-class index) below.
    static constexpr uint32_t kEnd = 0;  // ends an alternative
    static constexpr uint32_t kRuleTag = 1u << 30;
    static constexpr uint32_t kBytesTag = 2u << 30;
    static constexpr uint32_t kTagMask = 3u << 30;
    static constexpr uint32_t kArgMask = ~kTagMask;

    // Position 0 holds a reference to the root rule and position 1 its end: the bottom of every parse.
    static constexpr uint32_t kStartPos = 0;

    std::vector<uint32_t> elements;
    std::vector<uint32_t> alt_offsets;  // [n_rules + 1] into alt_starts
    std::vector<uint32_t> alt_starts;   // element position of each alternative's first element (kEnd if empty)
    std::vector<ByteSet> byte_sets;
    std::vector<std::string> rule_names;  // for debugging and messages
    // Per element position: whether it lies in an alternative of a rule written by the user (or the synthetic
    // start). Those alternatives are the frames GrammarMatcher caches context-independent masks for: generated
    // rules (repetition, groups, multi-byte classes) are too small to be useful frames on their own.
    std::vector<uint8_t> user_frame;
    uint64_t uid = 0;  // unique per compilation: keys the shared mask cache

    static bool is_end(uint32_t e) { return e == kEnd; }
    static bool is_rule(uint32_t e) { return (e & kTagMask) == kRuleTag; }
    static bool is_bytes(uint32_t e) { return (e & kTagMask) == kBytesTag; }
    static uint32_t arg(uint32_t e) { return e & kArgMask; }
    bool byte_matches(uint32_t element, uint8_t b) const { return (byte_sets[arg(element)][b >> 6] >> (b & 63)) & 1; }
};

// Parses, checks and lowers a GBNF grammar. Errors name the line, column or rule.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view gbnf, std::string_view root = "root");

}  // namespace loradesk::grammar
