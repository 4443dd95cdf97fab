// Code-point level grammar IR: what the GBNF parser (and anything else that builds grammars) produces and what
// grammar_compiler checks and lowers to bytes. Repetition is already desugared into generated rules; literals are
// sequences of one-code-point classes. Owns no runtime state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loradesk::grammar {

// Limits against hostile grammars: exceeding one is a compile error, never an allocation failure.
inline constexpr std::size_t kMaxGrammarBytes = 1 << 20;  // GBNF text
inline constexpr std::size_t kMaxUserRules = 10000;       // rules written in the text
inline constexpr std::size_t kMaxRules = 200000;          // including rules generated for repetition
inline constexpr std::size_t kMaxElements = 1000000;      // elements over all rules after expansion
inline constexpr uint32_t kMaxRepetition = 10000;         // n in x{m,n}
inline constexpr int kMaxNesting = 200;                   // parenthesised groups (the parsers recurse)
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CpRange {
    uint32_t lo = 0;  // inclusive
    uint32_t hi = 0;  // inclusive
};

// One element of a sequence: a set of code points (sorted, disjoint, non-adjacent ranges; negation already
// resolved) or a reference to a rule.
struct IrElement {
    bool is_rule = false;
    uint32_t rule = 0;
    std::vector<CpRange> ranges;
};

using IrSequence = std::vector<IrElement>;

struct IrRule {
    std::string name;
    std::vector<IrSequence> alternatives;
    bool generated = false;  // made for a group or a repetition; messages name `origin` instead
    uint32_t origin = 0;     // the user rule this one was generated inside (itself when not generated)
    int line = 0;            // where it was defined, for messages
};

struct GrammarIr {
    std::vector<IrRule> rules;
    uint32_t root = 0;
};

// Sorts, merges overlapping/adjacent ranges, clamps to [0, kMaxCodePoint].
std::vector<CpRange> normalize_ranges(std::vector<CpRange> ranges);
// The complement within [0, kMaxCodePoint] of normalized ranges.
std::vector<CpRange> negate_ranges(const std::vector<CpRange>& ranges);

}  // namespace loradesk::grammar
