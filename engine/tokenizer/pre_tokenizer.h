// tokenizer.json "pre_tokenizer": Split (regex or literal, five delimiter behaviours, invert), ByteLevel
// (GPT-2 regex, add_prefix_space, byte-to-unicode mapping), Metaspace, Digits, Whitespace,
// WhitespaceSplit and Sequence (flattened). Immutable after loading; thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tokenizer/pcre_regex.h"

namespace loradesk::tokenizer {

// One span of text on its way to the model. `at_start` is true only for the span that begins at
// offset 0 of the original input (Metaspace's prepend_scheme "first" depends on it).
struct PreToken {
    std::string text;
    bool at_start = false;
};

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// Splits text at the given non-overlapping [begin, end) matches; `invert` treats the gaps as delimiters.
// Empty pieces are dropped, like HF's PreTokenizedString::split.
std::vector<std::string> split_with_behavior(const std::string& text,
                                             const std::vector<std::pair<std::size_t, std::size_t>>& matches,
                                             SplitBehavior behavior, bool invert);

class PreTokenizer {
  public:
    static PreTokenizer from_json(const nlohmann::json& config);

    // Appends the pre-tokens of `piece` to `out`.
    void pre_tokenize(PreToken piece, std::vector<PreToken>& out) const;
    bool empty() const { return m_steps.empty(); }

  private:
    enum class Kind { split, byte_level, metaspace, digits };
    enum class PrependScheme { first, always, never };
    struct Step {
        Kind kind = Kind{};
        std::shared_ptr<PcreRegex> pattern;  // split / byte_level with use_regex / digits
        SplitBehavior behavior = SplitBehavior::isolated;
        bool invert = false;
        bool add_prefix_space = false;  // byte_level
        std::string replacement;        // metaspace
        PrependScheme prepend = PrependScheme::always;
        bool metaspace_split = true;
    };
    static Step step_of(Kind kind) {
        Step s;
        s.kind = kind;
        return s;
    }
    static void add_steps(const nlohmann::json& config, std::vector<Step>& steps);
    static void apply(const Step& step, std::vector<PreToken>& pieces);
    std::vector<Step> m_steps;
};

}  // namespace loradesk::tokenizer
