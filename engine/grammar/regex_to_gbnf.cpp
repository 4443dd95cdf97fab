#include "grammar/regex_to_gbnf.h"

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/gbnf_choice.h"
#include "grammar/grammar_ir.h"

namespace loradesk::grammar {
namespace {

using Ranges = std::vector<CpRange>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's WhiteSpace and LineTerminator code points.
const Ranges kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kDotExcluded = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};  // '.' stops at line terminators

class RegexConverter {
  public:
    explicit RegexConverter(std::string_view re) : m_re(re) {}

    std::string convert() {
        if (peek() == '^') ++m_pos;
        std::string body = parse_alternation();
        if (m_pos < m_re.size()) {
            if (peek() == ')') fail("unmatched ')'");
            fail(fmt::format("unexpected '{}'", peek()));
        }
        return "root ::= " + body + "\n";
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        throw_expected(ErrorCode::invalid_argument, fmt::format("regex at offset {}: {}", m_pos, what));
    }
    bool at_end() const { return m_pos >= m_re.size(); }
    char peek(std::size_t ahead = 0) const { return m_pos + ahead < m_re.size() ? m_re[m_pos + ahead] : '\0'; }

    std::string parse_alternation() {
        std::string out = parse_concat();
        while (peek() == '|') {
            ++m_pos;
            out += " | " + parse_concat();
        }
        return out;
    }

    std::string parse_concat() {
        std::string out;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$' && m_pos + 1 == m_re.size()) {  // trailing anchor: the match is whole anyway
                ++m_pos;
                break;
            }
            std::string item = parse_quantified();
            if (item.empty()) continue;
            if (!out.empty()) out += ' ';
            out += item;
        }
        return out.empty() ? "\"\"" : out;
    }

    // {m}, {m,}, {m,n} at m_pos, or nothing (then '{' is a literal, as ECMAScript's Annex B has it).
    bool parse_braces(uint32_t& lo, uint32_t& hi, bool& unbounded) {
        std::size_t p = m_pos + 1;
        auto number = [&](uint32_t& v) {
            std::size_t start = p;
            uint64_t x = 0;
            while (p < m_re.size() && m_re[p] >= '0' && m_re[p] <= '9') {
                x = std::min<uint64_t>(x * 10 + uint64_t(m_re[p] - '0'), uint64_t(1) << 32);
                ++p;
            }
            v = uint32_t(std::min<uint64_t>(x, 0xFFFFFFFFu));
            return p > start;
        };
        if (!number(lo)) return false;
        unbounded = false;
        hi = lo;
        if (p < m_re.size() && m_re[p] == ',') {
            ++p;
            if (!number(hi)) unbounded = true;
        }
        if (p >= m_re.size() || m_re[p] != '}') return false;
        m_pos = p + 1;
        return true;
    }

    std::string parse_quantified() {
        std::size_t atom_at = m_pos;
        std::string atom = parse_atom();
        bool quantified = false;
        for (;;) {
            char c = peek();
            std::string suffix;
            if (c == '*' || c == '+' || c == '?') {
                ++m_pos;
                suffix = std::string(1, c);
            } else if (c == '{') {
                uint32_t lo = 0, hi = 0;
                bool unbounded = false;
                if (!parse_braces(lo, hi, unbounded)) break;
                if (lo > kMaxRepetition || (!unbounded && hi > kMaxRepetition))
                    fail(fmt::format("repetition count over {}", kMaxRepetition));
                if (!unbounded && hi < lo) fail(fmt::format("repetition {{{},{}}} is out of order", lo, hi));
                suffix = unbounded ? fmt::format("{{{},}}", lo) : fmt::format("{{{},{}}}", lo, hi);
            } else {
                break;
            }
            if (quantified)
                fail("nothing to repeat (a quantifier follows another; possessive forms are not supported)");
            if (atom.empty()) fail(fmt::format("nothing to repeat before '{}'", m_re[atom_at]));
            if (peek() == '?') ++m_pos;  // lazy: the set of full matches is the same
            atom = "(" + atom + ")" + suffix;
            quantified = true;
        }
        return atom;
    }

    std::string parse_atom() {
        char c = peek();
        switch (c) {
            case '(':
                return parse_group();
            case '[':
                return gbnf_class(parse_class());
            case '.':
                ++m_pos;
                return gbnf_class(negate_ranges(normalize_ranges(kDotExcluded)));
            case '\\':
                return parse_escape_atom();
            case '*':
            case '+':
            case '?':
                fail(fmt::format("nothing to repeat before '{}'", c));
            case '^':
                fail("'^' anchor is only supported at the start of the pattern");
            case '$':
                fail("'$' anchor is only supported at the end of the pattern");
            default: {
                uint32_t cp = next_code_point();
                return gbnf_class({{cp, cp}});
            }
        }
    }

    std::string parse_group() {
        if (++m_depth > kMaxNesting) fail(fmt::format("groups nested more than {} deep", kMaxNesting));
        ++m_pos;
        if (peek() == '?') {
            if (peek(1) == ':') {
                m_pos += 2;
            } else if (peek(1) == '=' || peek(1) == '!') {
                fail("lookahead (?= / (?! is not supported");
            } else if (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!')) {
                fail("lookbehind (?<= / (?<! is not supported");
            } else if (peek(1) == '<' || (peek(1) == 'P' && peek(2) == '<')) {
                while (!at_end() && peek() != '>') ++m_pos;  // named group: the name does not matter here
                if (at_end()) fail("unterminated group name");
                ++m_pos;
            } else {
                fail(fmt::format("group modifier '(?{}' (inline flags, conditionals) is not supported", peek(1)));
            }
        }
        std::string body = parse_alternation();
        if (peek() != ')') fail("missing ')'");
        ++m_pos;
        --m_depth;
        return "(" + body + ")";
    }

    uint32_t next_code_point() {
        unsigned char c = static_cast<unsigned char>(peek());
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || m_pos + std::size_t(n) > m_re.size()) fail("invalid UTF-8");
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (int i = 1; i < n; ++i) {
            unsigned char cc = static_cast<unsigned char>(m_re[m_pos + std::size_t(i)]);
            if ((cc & 0xC0) != 0x80) fail("invalid UTF-8");
            cp = (cp << 6) | (cc & 0x3F);
        }
        m_pos += std::size_t(n);
        return cp;
    }

    uint32_t hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            char c = peek();
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) fail(fmt::format("expected {} hex digits", digits));
            v = v * 16 + uint32_t(d);
            ++m_pos;
        }
        return v;
    }

    // After a backslash: a class escape (\d ...) fills `ranges` and returns true; otherwise `cp` is the code point.
    bool parse_escape(bool in_class, Ranges& ranges, uint32_t& cp) {
        ++m_pos;  // the backslash
        if (at_end()) fail("pattern ends with a lone backslash");
        char e = peek();
        ++m_pos;
        switch (e) {
            case 'd':
                ranges = kDigit;
                return true;
            case 'D':
                ranges = negate_ranges(normalize_ranges(kDigit));
                return true;
            case 'w':
                ranges = kWord;
                return true;
            case 'W':
                ranges = negate_ranges(normalize_ranges(kWord));
                return true;
            case 's':
                ranges = kSpace;
                return true;
            case 'S':
                ranges = negate_ranges(normalize_ranges(kSpace));
                return true;
            case 'n':
                cp = '\n';
                return false;
            case 'r':
                cp = '\r';
                return false;
            case 't':
                cp = '\t';
                return false;
            case 'f':
                cp = '\f';
                return false;
            case 'v':
                cp = '\v';
                return false;
            case '0':
                if (peek() >= '0' && peek() <= '9') fail("octal escapes are not supported");
                cp = 0;
                return false;
            case 'x':
                cp = hex(2);
                return false;
            case 'u':
                if (peek() == '{') {
                    ++m_pos;
                    cp = 0;
                    int n = 0;
                    while (!at_end() && peek() != '}') {
                        cp = cp * 16 + hex(1);
                        if (++n > 6 || cp > kMaxCodePoint) fail("\\u{...} is beyond U+10FFFF");
                    }
                    if (at_end() || n == 0) fail("unterminated \\u{...}");
                    ++m_pos;
                } else {
                    cp = hex(4);
                }
                return false;
            case 'c':
                if (!std::isalpha(static_cast<unsigned char>(peek()))) fail("\\c must be followed by a letter");
                cp = uint32_t(peek() % 32);
                ++m_pos;
                return false;
            case 'b':
                if (in_class) {
                    cp = 0x08;
                    return false;
                }
                fail("word boundary \\b is not supported");
            case 'B':
                fail("word boundary \\B is not supported");
            case 'k':
                fail("named backreference \\k is not supported");
            case 'p':
            case 'P':
                fail(fmt::format("Unicode property escape \\{} is not supported", e));
            case 'A':
            case 'Z':
            case 'z':
            case 'G':
                fail(fmt::format("anchor \\{} is not supported", e));
            default:
                if (e >= '1' && e <= '9') fail(fmt::format("backreference \\{} is not supported", e));
                --m_pos;
                cp = next_code_point();  // an escaped punctuation or other character stands for itself
                return false;
        }
    }

    std::string parse_escape_atom() {
        Ranges ranges;
        uint32_t cp = 0;
        if (parse_escape(false, ranges, cp)) return gbnf_class(ranges);
        return gbnf_class({{cp, cp}});
    }

    Ranges parse_class() {
        std::size_t open = m_pos++;
        bool negated = peek() == '^';
        if (negated) ++m_pos;
        Ranges ranges;
        bool first = true;
        while (first || peek() != ']') {
            if (at_end()) {
                m_pos = open;
                fail("unterminated character class");
            }
            if (first && peek() == ']') break;  // "[]" matches nothing, "[^]" anything
            first = false;
            Ranges cls;
            uint32_t lo = 0;
            bool is_class = peek() == '\\' ? parse_escape(true, cls, lo) : (lo = next_code_point(), false);
            if (is_class) {
                ranges.insert(ranges.end(), cls.begin(), cls.end());
                continue;
            }
            if (peek() == '-' && peek(1) != ']' && m_pos + 1 < m_re.size()) {
                ++m_pos;
                uint32_t hi = 0;
                if (peek() == '\\' ? parse_escape(true, cls, hi) : (hi = next_code_point(), false))
                    fail("a class escape cannot end a range");
                if (hi < lo) fail("range out of order in character class");
                ranges.push_back({lo, hi});
            } else {
                ranges.push_back({lo, lo});
            }
        }
        ++m_pos;
        auto norm = normalize_ranges(std::move(ranges));
        return negated ? negate_ranges(norm) : norm;
    }

    std::string_view m_re;
    std::size_t m_pos = 0;
    int m_depth = 0;  // open groups
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view regex) {
    if (regex.size() > kMaxGrammarBytes / 8)
        return Status::failure(ErrorCode::too_large, fmt::format("regex of {} bytes is too long", regex.size()));
    try {
        return RegexConverter(regex).convert();
    } catch (const Error& e) {
        return Status::failure(e.code(), e.what());
    }
}

}  // namespace loradesk::grammar
