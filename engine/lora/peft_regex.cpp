// PCRE2 wrappers with Python `re` anchoring semantics. Patterns are tiny and compiled per call: the
// config is matched once per module at load time, never on the serving path.
#include "lora/peft_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

#include "core/error.h"

namespace loradesk::lora {
namespace {

struct CodeDeleter {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct DataDeleter {
    void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
};

std::unique_ptr<pcre2_code, CodeDeleter> compile(const std::string& pattern, uint32_t options,
                                                 const std::string& what) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options | PCRE2_UTF,
                                     &err, &offset, nullptr);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw_expected(ErrorCode::invalid_argument, what + ": regular expression '" + pattern + "' does not compile (" +
                                                        reinterpret_cast<const char*>(msg) + " at offset " +
                                                        std::to_string(offset) + ")");
    }
    return std::unique_ptr<pcre2_code, CodeDeleter>(code);
}

// Runs an anchored match; returns the match data on success, nullptr when the pattern does not match.
// Any other outcome (PCRE2's backtracking limit on a pattern like "(a|aa)*$", invalid UTF-8 in the text) is an
// error: reading it as "no match" silently left modules out of an adapter.
std::unique_ptr<pcre2_match_data, DataDeleter> run(const pcre2_code* code, const std::string& pattern,
                                                   const std::string& text, uint32_t options, const std::string& what) {
    std::unique_ptr<pcre2_match_data, DataDeleter> md(pcre2_match_data_create_from_pattern(code, nullptr));
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, options, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return nullptr;
    if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        throw_expected(ErrorCode::invalid_argument, what + ": regular expression '" + pattern + "' failed on '" + text +
                                                        "' (" + reinterpret_cast<const char*>(msg) +
                                                        "); simplify the pattern");
    }
    return md;
}

}  // namespace

bool regex_fullmatch(const std::string& pattern, const std::string& text, const std::string& what) {
    // Python's fullmatch lets alternations backtrack until the whole string matches; PCRE2's
    // ANCHORED + ENDANCHORED has exactly that meaning.
    auto code = compile(pattern, PCRE2_ANCHORED | PCRE2_ENDANCHORED, what);
    return run(code.get(), pattern, text, 0, what) != nullptr;
}

std::optional<std::string> regex_match_group1(const std::string& pattern, const std::string& text,
                                              const std::string& what) {
    // Python's `$` also matches before a trailing newline; module names never contain one, and
    // PCRE2's default `$` behaves the same way.
    auto code = compile(pattern, PCRE2_ANCHORED, what);
    auto md = run(code.get(), pattern, text, 0, what);
    if (!md) return std::nullopt;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (pcre2_get_ovector_count(md.get()) < 2 || ov[2] == PCRE2_UNSET) return std::string();
    return text.substr(ov[2], ov[3] - ov[2]);
}

}  // namespace loradesk::lora
