// UTF-8 validation, lossy decoding, normalization and the GPT-2 byte table.
#include "tokenizer/unicode_text.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace loradesk::tokenizer {

std::size_t utf8_sequence_length(std::string_view s, std::size_t pos) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    unsigned char c = p[pos];
    if (c < 0x80) return 1;
    auto cont = [&](std::size_t i) { return pos + i < n && (p[pos + i] & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (pos + 1 >= n) return 0;
        unsigned char c1 = p[pos + 1];
        // Second-byte ranges exclude overlongs (E0) and surrogates (ED).
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (c1 < lo || c1 > hi) return 0;
        return cont(2) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (pos + 1 >= n) return 0;
        unsigned char c1 = p[pos + 1];
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (c1 < lo || c1 > hi) return 0;
        return cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
}

std::size_t find_invalid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = utf8_sequence_length(s, i);
        if (len == 0) return i;
        i += len;
    }
    return std::string_view::npos;
}

char32_t next_code_point(std::string_view s, std::size_t& pos) {
    auto c = static_cast<unsigned char>(s[pos]);
    if (c < 0x80) {
        ++pos;
        return c;
    }
    std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    char32_t cp = c & (0x7F >> len);
    for (std::size_t i = 1; i < len && pos + i < s.size(); ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
    pos += len;
    return cp;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

std::string utf8_lossy(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t len = utf8_sequence_length(s, i);
        if (len > 0) {
            out.append(s.data() + i, len);
            i += len;
            continue;
        }
        // Maximal subpart: a lead byte followed by the continuation bytes that were still valid for it.
        unsigned char c = p[i];
        std::size_t need = (c >= 0xC2 && c <= 0xDF)   ? 1
                           : (c >= 0xE0 && c <= 0xEF) ? 2
                           : (c >= 0xF0 && c <= 0xF4) ? 3
                                                      : 0;
        std::size_t j = i + 1;
        for (std::size_t k = 0; k < need && j < s.size(); ++k, ++j) {
            unsigned char ck = p[j];
            unsigned char lo = 0x80, hi = 0xBF;
            if (k == 0) {
                if (c == 0xE0) lo = 0xA0;
                if (c == 0xED) hi = 0x9F;
                if (c == 0xF0) lo = 0x90;
                if (c == 0xF4) hi = 0x8F;
            }
            if (ck < lo || ck > hi) break;
        }
        out += kReplacementChar;
        i = j;
    }
    return out;
}

bool is_unicode_whitespace(char32_t cp) {
    switch (cp) {
        case 0x09:
        case 0x0A:
        case 0x0B:
        case 0x0C:
        case 0x0D:
        case 0x20:
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool is_unicode_alnum(char32_t cp) {
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
    auto cat = utf8proc_category(utf8proc_int32_t(cp));
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

bool is_unicode_numeric(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    auto cat = utf8proc_category(utf8proc_int32_t(cp));
    return cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
}

std::string normalize_unicode(std::string_view text, NormalForm form) {
    if (text.empty()) return {};
    int options = UTF8PROC_STABLE;
    switch (form) {
        case NormalForm::nfc:
            options |= UTF8PROC_COMPOSE;
            break;
        case NormalForm::nfd:
            options |= UTF8PROC_DECOMPOSE;
            break;
        case NormalForm::nfkc:
            options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
            break;
        case NormalForm::nfkd:
            options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
            break;
    }
    utf8proc_uint8_t* out = nullptr;
    auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), utf8proc_ssize_t(text.size()), &out,
                          utf8proc_option_t(options));
    if (n < 0)
        throw_expected(ErrorCode::invalid_argument,
                       std::string("cannot normalize text: ") + utf8proc_errmsg(n) + " (is the input valid UTF-8?)");
    std::string result(reinterpret_cast<const char*>(out), std::size_t(n));
    std::free(out);
    return result;
}

std::string to_lower_unicode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) append_utf8(out, char32_t(utf8proc_tolower(utf8proc_int32_t(next_code_point(text, i)))));
    return out;
}

namespace {

struct ByteTables {
    std::array<std::string, 256> to_unicode;
    std::vector<int> to_byte = std::vector<int>(0x200, -1);
    ByteTables() {
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char32_t cp = printable ? char32_t(b) : char32_t(0x100 + extra++);
            append_utf8(to_unicode[b], cp);
            to_byte[cp] = b;
        }
    }
};

const ByteTables& byte_tables() {
    static const ByteTables t;
    return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode_table() { return byte_tables().to_unicode; }

int unicode_to_byte(char32_t cp) { return cp < 0x200 ? byte_tables().to_byte[cp] : -1; }

}  // namespace loradesk::tokenizer
