// UTF-8 helpers shared by the tokenizer: validation, code point iteration, lossy decoding (U+FFFD like
// Python's errors="replace"), Unicode normalization forms (utf8proc) and GPT-2's byte-to-unicode table.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loradesk::tokenizer {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence starting at text[pos], or 0 if it is not well formed
// (overlong, surrogate, beyond U+10FFFF, truncated).
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos);

// Offset of the first byte that is not part of well-formed UTF-8, or npos when the text is valid.
std::size_t find_invalid_utf8(std::string_view text);

// Decodes the code point at text[pos] (which must be valid) and advances pos.
char32_t next_code_point(std::string_view text, std::size_t& pos);
void append_utf8(std::string& out, char32_t cp);

// Replaces every maximal ill-formed subsequence with U+FFFD (WHATWG / Rust from_utf8_lossy rule).
std::string utf8_lossy(std::string_view bytes);

// Unicode property checks used by added-token matching and pre-tokenizers.
bool is_unicode_whitespace(char32_t cp);  // Rust char::is_whitespace
bool is_unicode_alnum(char32_t cp);       // Rust char::is_alphanumeric (L* or N*)
bool is_unicode_numeric(char32_t cp);     // Rust char::is_numeric (N*)

enum class NormalForm { nfc, nfd, nfkc, nfkd };
// Throws ExpectedError on invalid UTF-8.
std::string normalize_unicode(std::string_view text, NormalForm form);
std::string to_lower_unicode(std::string_view text);

// GPT-2 bytes_to_unicode: every byte maps to one printable code point, stored as UTF-8.
const std::array<std::string, 256>& byte_to_unicode_table();
// Reverse map for the decoder: code point -> byte, or -1 when the code point is not in the table.
int unicode_to_byte(char32_t cp);

}  // namespace loradesk::tokenizer
