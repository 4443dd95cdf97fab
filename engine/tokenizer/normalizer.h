// tokenizer.json "normalizer": NFC/NFD/NFKC/NFKD, Lowercase, Strip, Prepend, Replace and Sequence
// (flattened into an ordered list of steps). Immutable after loading; thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tokenizer/pcre_regex.h"
#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

class Normalizer {
  public:
    // `config` is the JSON value of "normalizer" (null gives the identity). Throws ExpectedError naming
    // the supported types for anything else.
    static Normalizer from_json(const nlohmann::json& config);

    std::string normalize(std::string text) const;
    bool empty() const { return m_steps.empty(); }

  private:
    enum class Kind { unicode, lowercase, strip, prepend, replace };
    struct Step {
        Kind kind = Kind{};
        NormalForm form = NormalForm::nfc;
        bool strip_left = false, strip_right = false;
        std::string text;                    // prepend content / replacement content
        std::shared_ptr<PcreRegex> pattern;  // replace pattern (literal strings are escaped)
    };
    static Step step_of(Kind kind) {
        Step s;
        s.kind = kind;
        return s;
    }
    static void add_steps(const nlohmann::json& config, std::vector<Step>& steps);
    std::vector<Step> m_steps;
};

// Shared by normalizer and decoder: reads {"String": s} or {"Regex": r} into a compiled pattern.
std::shared_ptr<PcreRegex> pattern_from_json(const nlohmann::json& pattern, const char* where);
// Replaces every match of `pattern` in `text` with `content`.
std::string replace_all(const PcreRegex& pattern, const std::string& text, const std::string& content);

}  // namespace loradesk::tokenizer
