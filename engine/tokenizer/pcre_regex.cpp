// PCRE2 wrapper: compile once with UTF|UCP (+JIT), match with per-call match data.
#include "tokenizer/pcre_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace loradesk::tokenizer {

PcreRegex::PcreRegex(const std::string& pattern) : m_pattern(pattern) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // Input is validated as UTF-8 once at the tokenizer entry, so matching skips the per-call check.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (!code) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(err, buf, sizeof buf);
        throw_expected(ErrorCode::corrupt_file, "tokenizer regex '" + pattern + "' does not compile at offset " +
                                                    std::to_string(err_offset) + ": " + reinterpret_cast<char*>(buf));
    }
    m_jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    m_code = code;
}

PcreRegex::~PcreRegex() { pcre2_code_free(static_cast<pcre2_code*>(m_code)); }

std::vector<std::pair<std::size_t, std::size_t>> PcreRegex::find_all(std::string_view text) const {
    auto* code = static_cast<pcre2_code*>(m_code);
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
    std::vector<std::pair<std::size_t, std::size_t>> out;
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t pos = 0;
    while (pos <= text.size()) {
        int rc = m_jit ? pcre2_jit_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr)
                       : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
        // The JIT runs on a small fixed stack; the interpreter keeps its frames on the heap, so a pathological
        // input (huge whitespace runs against lookaheads) still gets an answer.
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(rc, buf, sizeof buf);
            throw_error(ErrorCode::internal, "regex '" + m_pattern + "' failed: " + reinterpret_cast<char*>(buf));
        }
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        std::size_t b = ov[0], e = ov[1];
        if (e > b) {
            out.emplace_back(b, e);
            pos = e;
        } else {
            // Empty match: step over one whole character so that matching never splits a code point.
            if (b >= text.size()) break;
            pos = b + 1;
            while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
        }
    }
    return out;
}

std::string pcre_escape(std::string_view literal) {
    // \Q...\E quotes everything except a literal "\E", which is split out.
    std::string out = "\\Q";
    for (std::size_t i = 0; i < literal.size(); ++i) {
        if (literal[i] == '\\' && i + 1 < literal.size() && literal[i + 1] == 'E') {
            out += "\\E\\\\E\\Q";
            ++i;
        } else {
            out += literal[i];
        }
    }
    out += "\\E";
    return out;
}

}  // namespace loradesk::tokenizer
