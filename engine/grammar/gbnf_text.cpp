// Escaping and repetition spelling for generated GBNF.
#include "grammar/gbnf_text.h"

#include "grammar/gbnf_choice.h"

#include <fmt/format.h>

namespace loradesk::grammar::gbnf {

std::string literal(std::string_view utf8) { return gbnf_literal(utf8); }  // one escaper for every front end

std::string class_member(char32_t cp) {
    const bool plain = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    if (plain) return std::string(1, static_cast<char>(cp));
    if (cp < 0x80) return fmt::format("\\x{:02X}", static_cast<unsigned>(cp));
    if (cp <= 0xFFFF) return fmt::format("\\u{:04X}", static_cast<unsigned>(cp));
    // Beyond the BMP: the raw UTF-8, which the parser reads as one code point.
    return utf8(cp);
}

std::string utf8(char32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

std::string repeat(std::string_view atom, std::size_t min, std::optional<std::size_t> max) {
    if (max && *max == 0) return "";
    if (max && min == 1 && *max == 1) return std::string(atom);
    if (max && min == 0 && *max == 1) return fmt::format("{}?", atom);
    if (!max && min == 0) return fmt::format("{}*", atom);
    if (!max && min == 1) return fmt::format("{}+", atom);
    if (!max) return fmt::format("{}{{{},}}", atom, min);
    if (min == *max) return fmt::format("{}{{{}}}", atom, min);
    return fmt::format("{}{{{},{}}}", atom, min, *max);
}

char32_t next_code_point(std::string_view s, std::size_t& pos) {
    const auto b0 = static_cast<unsigned char>(s[pos]);
    int n_extra = b0 < 0x80 ? 0 : b0 < 0xE0 ? 1 : b0 < 0xF0 ? 2 : 3;
    char32_t cp = n_extra == 0 ? b0 : n_extra == 1 ? (b0 & 0x1F) : n_extra == 2 ? (b0 & 0x0F) : (b0 & 0x07);
    ++pos;
    for (int i = 0; i < n_extra && pos < s.size(); ++i, ++pos)
        cp = (cp << 6) | (static_cast<unsigned char>(s[pos]) & 0x3F);
    return cp;
}

}  // namespace loradesk::grammar::gbnf
