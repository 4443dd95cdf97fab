// SchemaCompiler for "pattern": an ECMAScript regex translated straight into GBNF over the *JSON spelling* of the
// string, so that a pattern admitting a quote, a backslash or control characters makes the grammar write them
// escaped. Unanchored sides get any-character padding, as JSON Schema patterns are searches. Supported: literals,
// escapes (\d \w \s \D \W \S \n \r \t \f \v \0 \xHH \uHHHH \u{...} and escaped punctuation), classes with ranges
// and negation, '.', groups ( ) (?: ) (?<name> ), alternation, quantifiers * + ? {m} {m,} {m,n} (lazy forms read as
// greedy), '^' at the start and '$' at the end of a top-level alternative. Anything else is an error naming it.
// Negated classes and '.' only produce unescaped characters plus \" and \\ (a subset: still valid strings).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/json_schema_compiler.h"

namespace loradesk::grammar::json_schema {
namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
using Ranges = std::vector<std::pair<char32_t, char32_t>>;  // sorted, disjoint after normalize()

Ranges normalize(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto& [lo, hi] : r) {
        if (!out.empty() && lo <= out.back().second + 1) {
            out.back().second = std::max(out.back().second, hi);
        } else {
            out.emplace_back(lo, hi);
        }
    }
    return out;
}

Ranges complement(const Ranges& r) {
    Ranges out;
    char32_t next = 0;
    for (const auto& [lo, hi] : normalize(r)) {
        if (lo > next) out.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
    return out;
}

Ranges subtract(const Ranges& a, const Ranges& b) {
    Ranges not_b = complement(b), out;
    for (const auto& [alo, ahi] : normalize(a))
        for (const auto& [blo, bhi] : not_b)
            if (std::max(alo, blo) <= std::min(ahi, bhi)) out.emplace_back(std::max(alo, blo), std::min(ahi, bhi));
    return out;
}

bool contains(const Ranges& r, char32_t c) {
    return std::any_of(r.begin(), r.end(), [c](const auto& p) { return p.first <= c && c <= p.second; });
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

// One set of code points as a GBNF term over JSON string content: unescaped members as a class, '"' and '\' and
// (from explicit, non-negated sets) control characters as their JSON escapes.
std::string json_chars(const Ranges& set, bool explicit_controls) {
    const Ranges raw = subtract(set, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}});
    std::vector<std::string> alts;
    if (!raw.empty()) {
        std::string cls = "[";
        for (const auto& [lo, hi] : raw)
            cls += lo == hi ? gbnf::class_member(lo) : gbnf::class_member(lo) + "-" + gbnf::class_member(hi);
        alts.push_back(cls + "]");
    }
    if (contains(set, '"')) alts.push_back(R"("\\\"")");
    if (contains(set, '\\')) alts.push_back(R"("\\\\")");
    if (explicit_controls) {
        for (char32_t c = 0; c < 0x20; ++c) {
            if (!contains(set, c)) continue;
            static constexpr std::string_view kShort[] = {"b", "t", "n", "", "f", "r"};  // 8..13, \v has none
            const bool has_short = c >= 8 && c <= 13 && !kShort[c - 8].empty();
            alts.push_back(has_short ? fmt::format(R"("\\{}")", kShort[c - 8]) : fmt::format(R"("\\u{:04x}")", int(c)));
        }
    }
    if (alts.empty()) return "";
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
    return out + " )";
}

class PatternTranslator {
  public:
    PatternTranslator(std::string pattern, std::string path, std::string any_char)
        : m_src(pattern), m_path(std::move(path)), m_any_char(std::move(any_char)) {}

    std::string translate() {
        std::string out = alternation(true);
        if (m_pos < m_src.size()) error(fmt::format("unbalanced ')' at offset {}", m_pos));
        return out.empty() ? "\"\"" : out;
    }

  private:
    [[noreturn]] void error(const std::string& what) const {
        fail(fmt::format("unsupported regular expression in pattern at {}: {}", path_text(m_path), what));
    }
    bool at_end() const { return m_pos >= m_src.size(); }
    char peek() const { return at_end() ? '\0' : m_src[m_pos]; }
    char32_t next() { return gbnf::next_code_point(m_src, m_pos); }

    std::string alternation(bool top) {
        std::vector<std::string> alts;
        bool has_empty = false;
        for (;;) {
            std::string s = sequence(top);
            if (s.empty())
                has_empty = true;
            else
                alts.push_back(std::move(s));
            if (peek() != '|') break;
            ++m_pos;
        }
        if (alts.empty()) return "";
        std::string out = "(";
        for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
        return out + (has_empty ? " )?" : " )");
    }

    // Top-level alternatives are searches unless anchored.
    std::string sequence(bool top) {
        bool anchored_start = false, anchored_end = false;
        if (top && peek() == '^') ++m_pos, anchored_start = true;
        std::vector<std::string> items;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$') {
                ++m_pos;
                if (!top || !(at_end() || peek() == '|')) error("'$' is supported only at the end of the pattern");
                anchored_end = true;
                break;
            }
            if (peek() == '^') error("'^' is supported only at the start of the pattern");
            std::string item = quantified(atom());
            if (!item.empty()) items.push_back(std::move(item));
        }
        if (top && !anchored_start) items.insert(items.begin(), m_any_char + "*");
        if (top && !anchored_end) items.push_back(m_any_char + "*");
        std::string out;
        for (const auto& i : items) out += (out.empty() ? "" : " ") + i;
        return out;
    }

    std::string atom() {
        const char c = peek();
        if (c == '(') return group();
        if (c == '[') return json_chars(char_class(), true);
        if (c == '.') {
            ++m_pos;
            return json_chars(complement(kLineTerminators), false);
        }
        if (c == '\\') {
            auto [set, negated] = escape(false);
            return json_chars(set, !negated);
        }
        if (c == '*' || c == '+' || c == '?') error(fmt::format("'{}' has nothing to repeat", c));
        const char32_t cp = next();
        return json_chars({{cp, cp}}, true);
    }

    std::string group() {
        const std::size_t open = m_pos++;
        // The translation recurses per group: cap the nesting so that hostile patterns cannot exhaust the stack.
        if (++m_group_depth > kMaxGroupDepth) error(fmt::format("groups nest deeper than {}", kMaxGroupDepth));
        if (peek() == '?') {
            if (m_src.substr(m_pos, 2) == "?:") {
                m_pos += 2;
            } else if (m_src.substr(m_pos, 2) == "?<" && m_src.substr(m_pos, 3) != "?<=" &&
                       m_src.substr(m_pos, 3) != "?<!") {
                const std::size_t close = m_src.find('>', m_pos);
                if (close == std::string::npos) error("unterminated group name");
                m_pos = close + 1;
            } else {
                error(fmt::format("'(?{}' (lookaround, inline flags) at offset {}", peek_after(), open));
            }
        }
        std::string inner = alternation(false);
        if (peek() != ')') error(fmt::format("'(' at offset {} is not closed", open));
        ++m_pos;
        --m_group_depth;
        return inner.empty() ? "" : inner;
    }
    char peek_after() const { return m_pos + 1 < m_src.size() ? m_src[m_pos + 1] : ' '; }

    std::string quantified(std::string item) {
        std::size_t min = 0;
        std::optional<std::size_t> max;
        const char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            ++m_pos;
            min = c == '+' ? 1 : 0;
            if (c == '?') max = 1;
        } else if (c == '{' && std::isdigit(static_cast<unsigned char>(peek_after()))) {
            ++m_pos;
            min = number();
            max = min;
            if (peek() == ',') {
                ++m_pos;
                max = peek() == '}' ? std::nullopt : std::optional(number());
            }
            if (peek() != '}') error("malformed {m,n} quantifier");
            ++m_pos;
            if ((max && *max > kMaxRepeat) || min > kMaxRepeat || (max && *max < min))
                error("quantifier bounds out of order or above 10000");
        } else {
            return item;
        }
        if (peek() == '?') ++m_pos;  // lazy: the same strings
        if (peek() == '+') error("possessive quantifiers");
        if (item.empty()) return "";
        const bool single = item.front() == '[' || item.front() == '"' || item.front() == '(';
        return gbnf::repeat(single && item.back() != '?' ? item : "( " + item + " )", min, max);
    }

    std::size_t number() {
        std::size_t v = 0;
        if (!std::isdigit(static_cast<unsigned char>(peek()))) error("expected a number in a quantifier");
        while (std::isdigit(static_cast<unsigned char>(peek())) && v <= kMaxRepeat) v = v * 10 + (m_src[m_pos++] - '0');
        return v;
    }

    Ranges char_class() {
        ++m_pos;  // '['
        const bool negated = peek() == '^';
        if (negated) ++m_pos;
        Ranges set;
        while (!at_end() && peek() != ']') {
            const ClassAtom lo = class_atom();
            if (lo.single && peek() == '-' && m_pos + 1 < m_src.size() && m_src[m_pos + 1] != ']') {
                ++m_pos;
                const ClassAtom hi = class_atom();
                if (!hi.single) error("a class range must end in a single character");
                if (hi.cp < lo.cp) error("a class range is out of order");
                set.emplace_back(lo.cp, hi.cp);
            } else {
                set.insert(set.end(), lo.set.begin(), lo.set.end());
            }
        }
        if (at_end()) error("unterminated character class");
        ++m_pos;  // ']'
        return negated ? complement(set) : normalize(set);
    }

    struct ClassAtom {
        Ranges set;
        bool single = false;  // one code point, usable as a range end
        char32_t cp = 0;
    };
    ClassAtom class_atom() {
        if (peek() != '\\') {
            const char32_t cp = next();
            return {{{cp, cp}}, true, cp};
        }
        auto [set, negated] = escape(true);
        const bool single = !negated && set.size() == 1 && set[0].first == set[0].second;
        return {set, single, set.empty() ? 0 : set[0].first};
    }

    // An escape as a set; `negated` marks \D \W \S (controls then come out unescaped-only).
    std::pair<Ranges, bool> escape(bool in_class) {
        ++m_pos;  // '\'
        if (at_end()) error("the pattern ends with '\\'");
        const char c = m_src[m_pos++];
        auto one = [](char32_t cp) { return std::pair(Ranges{{cp, cp}}, false); };
        switch (c) {
            case 'd':
                return {kDigit, false};
            case 'w':
                return {kWord, false};
            case 's':
                return {kSpace, false};
            case 'D':
                return {complement(kDigit), true};
            case 'W':
                return {complement(kWord), true};
            case 'S':
                return {complement(kSpace), true};
            case 'n':
                return one('\n');
            case 'r':
                return one('\r');
            case 't':
                return one('\t');
            case 'f':
                return one('\f');
            case 'v':
                return one('\v');
            case '0':
                return one(0);
            case 'b':
                if (in_class) return one('\b');
                error("word boundaries (\\b)");
            case 'x':
                return one(hex(2));
            case 'u':
                if (peek() == '{') {
                    ++m_pos;
                    const std::size_t close = m_src.find('}', m_pos);
                    if (close == std::string::npos || close == m_pos || close - m_pos > 6) error("malformed \\u{...}");
                    char32_t v = hex(close - m_pos);
                    ++m_pos;
                    return one(v);
                }
                return one(hex(4));
            default:
                if (std::isalnum(static_cast<unsigned char>(c)))
                    error(fmt::format("the escape '\\{}' (backreferences, \\p{{...}}, \\B, \\k are not supported)", c));
                return one(static_cast<unsigned char>(c));
        }
    }

    char32_t hex(std::size_t digits) {
        char32_t v = 0;
        for (std::size_t i = 0; i < digits; ++i) {
            if (!std::isxdigit(static_cast<unsigned char>(peek()))) error("malformed hexadecimal escape");
            const char h = m_src[m_pos++];
            v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        if (v > kMaxCodePoint) error("code point beyond U+10FFFF");
        return v;
    }

    static constexpr int kMaxGroupDepth = 100;
    int m_group_depth = 0;
    std::string m_src;  // owned: callers pass temporaries
    std::size_t m_pos = 0;
    std::string m_path;
    std::string m_any_char;
};

}  // namespace

std::string SchemaCompiler::visit_pattern(const Json& schema, const std::string& path, const std::string& hint) {
    const Json& pattern = schema["pattern"];
    if (!pattern.is_string()) fail(fmt::format("'pattern' at {} must be a string", path_text(path)));
    PatternTranslator translator(pattern.get<std::string>(), path, primitive("char"));
    const std::string content = translator.translate();
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint, fmt::format(R"("\"" {} "\""{})", content, gap()));
}

}  // namespace loradesk::grammar::json_schema
