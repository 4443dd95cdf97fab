// A compiled PCRE2 pattern (UTF | UCP, JIT when available) used for Split pre-tokenizers, Replace
// normalizers/decoders and the ByteLevel GPT-2 split. Immutable after construction; find_all is
// thread-safe (each call owns its match data).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loradesk::tokenizer {

class PcreRegex {
  public:
    // Throws ExpectedError(corrupt_file) with PCRE2's message and offset when the pattern does not compile.
    explicit PcreRegex(const std::string& pattern);
    ~PcreRegex();
    PcreRegex(const PcreRegex&) = delete;
    PcreRegex& operator=(const PcreRegex&) = delete;

    // Non-overlapping, non-empty matches as [begin, end) byte offsets, left to right.
    std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;
    const std::string& pattern() const { return m_pattern; }

  private:
    std::string m_pattern;
    void* m_code = nullptr;  // pcre2_code_8*
    bool m_jit = false;
};

// Escapes a literal string so that PCRE2 matches it verbatim.
std::string pcre_escape(std::string_view literal);

}  // namespace loradesk::tokenizer
