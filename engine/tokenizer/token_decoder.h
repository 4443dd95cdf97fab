// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace and Sequence, with
// HF's decode_chain semantics (each step maps a list of token strings to a new list; the result is
// concatenated). Without a decoder, tokens are joined with spaces. Immutable; thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tokenizer/pcre_regex.h"

namespace loradesk::tokenizer {

class TokenDecoder {
  public:
    static TokenDecoder from_json(const nlohmann::json& config);

    // Invalid UTF-8 produced by byte-level or byte-fallback tokens becomes U+FFFD.
    std::string decode(std::vector<std::string> tokens) const;
    // The exact bytes one vocabulary token contributes inside generated text (constrained decoding matches
    // grammars against them): byte-level chars and <0xNN> byte tokens become their raw bytes, possibly a
    // partial UTF-8 character (never U+FFFD); Metaspace's mark becomes a space even at the start, and Strip
    // steps, which only trim the start of a whole text, are not applied.
    std::string token_bytes(const std::string& token) const;

  private:
    enum class Kind { byte_level, metaspace, byte_fallback, fuse, strip, replace };
    struct Step {
        Kind kind = Kind{};
        std::string replacement;  // metaspace char / strip content / replace content
        bool metaspace_strip_first = true;
        std::size_t strip_start = 0, strip_stop = 0;
        std::shared_ptr<PcreRegex> pattern;
    };
    static Step step_of(Kind kind) {
        Step s;
        s.kind = kind;
        return s;
    }
    static void add_steps(const nlohmann::json& config, std::vector<Step>& steps);
    static void apply(const Step& step, std::vector<std::string>& tokens);
    std::vector<Step> m_steps;
    bool m_has_decoder = false;
};

}  // namespace loradesk::tokenizer
