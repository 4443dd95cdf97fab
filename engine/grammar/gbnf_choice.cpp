#include "grammar/gbnf_choice.h"

#include <fmt/format.h>

namespace loradesk::grammar {
namespace {

// Escape form of one code point inside a literal or class; printable ASCII stays as is.
void append_code_point(std::string& out, uint32_t cp, bool in_class) {
    const bool special = cp == '"' || cp == '\\' || (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^'));
    if (cp >= 0x20 && cp < 0x7F && !special) {
        out += char(cp);
    } else if (special) {
        out += '\\';
        out += char(cp);
    } else if (cp < 0x100) {
        out += fmt::format("\\x{:02X}", cp);
    } else if (cp < 0x10000) {
        out += fmt::format("\\u{:04X}", cp);
    } else {
        out += fmt::format("\\U{:08X}", cp);
    }
}

}  // namespace

std::string gbnf_literal(std::string_view utf8) {
    std::string out = "\"";
    for (std::size_t i = 0; i < utf8.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(utf8[i]);
        if (c >= 0x80) {
            out += char(c);  // UTF-8 passes through; invalid UTF-8 is reported by the parser
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            append_code_point(out, c, false);
        }
    }
    return out + "\"";
}

std::string gbnf_class(const std::vector<CpRange>& ranges) {
    auto norm = normalize_ranges(ranges);
    if (norm.empty()) return "[^\\x00-\\U0010FFFF]";
    std::string out = "[";
    for (const auto& r : norm) {
        append_code_point(out, r.lo, true);
        if (r.hi != r.lo) {
            out += '-';
            append_code_point(out, r.hi, true);
        }
    }
    return out + "]";
}

std::string gbnf_for_choice(const std::vector<std::string>& choices) {
    std::string out = "root ::= ";
    if (choices.empty()) return out + "\"\"\n";
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i) out += " | ";
        out += gbnf_literal(choices[i]);
    }
    return out + "\n";
}

}  // namespace loradesk::grammar
