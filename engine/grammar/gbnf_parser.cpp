// Recursive-descent GBNF parser. Follows llama.cpp's grammar-parser: a rule ends at the end of its line unless
// inside parentheses (or the next line starts with '|'); postfix operators apply to the last element, where a
// whole string literal counts as one element. Repetition is desugared here, the way llama.cpp does, into
// right-recursive generated rules, so the IR only has alternatives, sequences, classes and references.
#include "grammar/gbnf_parser.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

#include "core/error.h"

namespace loradesk::grammar {
namespace {

constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
}

class Parser {
  public:
    explicit Parser(std::string_view src) : m_src(src) {}

    GrammarIr parse(std::string_view root) {
        skip_space(true);
        while (m_pos < m_src.size()) parse_rule();
        if (m_ir.rules.empty()) fail_plain("empty grammar: it has no rules (write e.g. root ::= \"yes\" | \"no\")");
        for (uint32_t id = 0; id < m_ir.rules.size(); ++id)
            if (!m_ir.rules[id].generated && !m_defined[id])
                fail(m_first_ref[id], fmt::format("rule '{}' is used but not defined", m_ir.rules[id].name));
        auto it = m_symbols.find(std::string(root));
        if (it == m_symbols.end())
            fail_plain(fmt::format("the grammar has no rule '{}' (the root rule, where matching starts)", root));
        m_ir.root = it->second;
        return std::move(m_ir);
    }

  private:
    [[noreturn]] void fail(std::size_t at, const std::string& message) const {
        int line = 1, column = 1;
        for (std::size_t i = 0; i < at && i < m_src.size(); ++i) {
            if (m_src[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw_expected(ErrorCode::invalid_argument, fmt::format("GBNF line {}, column {}: {}", line, column, message));
    }
    [[noreturn]] void fail_plain(const std::string& message) const {
        throw_expected(ErrorCode::invalid_argument, "GBNF: " + message);
    }

    bool at_end() const { return m_pos >= m_src.size(); }
    char peek(std::size_t ahead = 0) const { return m_pos + ahead < m_src.size() ? m_src[m_pos + ahead] : '\0'; }

    void skip_space(bool newline_ok) {
        while (!at_end()) {
            char c = m_src[m_pos];
            if (c == ' ' || c == '\t') {
                ++m_pos;
            } else if (c == '#') {
                while (!at_end() && m_src[m_pos] != '\n') ++m_pos;
            } else if ((c == '\n' || c == '\r') && newline_ok) {
                ++m_pos;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        std::size_t start = m_pos;
        while (!at_end() && is_name_char(m_src[m_pos])) ++m_pos;
        return std::string(m_src.substr(start, m_pos - start));
    }

    uint32_t symbol(const std::string& name, std::size_t at) {
        auto [it, inserted] = m_symbols.try_emplace(name, uint32_t(m_ir.rules.size()));
        if (inserted) {
            if (m_symbols.size() > kMaxUserRules)
                fail(at, fmt::format("more than {} rules; the grammar is too large", kMaxUserRules));
            new_rule(name, false);
            m_ir.rules.back().origin = it->second;
            m_first_ref[it->second] = at;
        }
        return it->second;
    }

    uint32_t new_rule(std::string name, bool generated) {
        if (m_ir.rules.size() >= kMaxRules)
            fail(m_pos,
                 fmt::format("more than {} rules after expanding repetitions; the grammar is too large", kMaxRules));
        IrRule r;
        r.name = std::move(name);
        r.generated = generated;
        r.origin = m_current;
        m_ir.rules.push_back(std::move(r));
        m_defined.push_back(false);
        m_first_ref.push_back(m_pos);
        return uint32_t(m_ir.rules.size() - 1);
    }

    uint32_t generated_rule(std::vector<IrSequence> alternatives) {
        uint32_t id = new_rule(fmt::format("{}~{}", m_ir.rules[m_current].name, m_ir.rules.size()), true);
        for (const auto& seq : alternatives) count_elements(seq.size());
        m_ir.rules[id].alternatives = std::move(alternatives);
        m_ir.rules[id].line = m_ir.rules[m_current].line;
        return id;
    }

    void count_elements(std::size_t n) {
        m_n_elements += n;
        if (m_n_elements > kMaxElements)
            fail(m_pos, fmt::format("more than {} elements after expanding repetitions; the grammar is too large",
                                    kMaxElements));
    }

    void parse_rule() {
        std::size_t name_at = m_pos;
        std::string name = parse_name();
        if (name.empty()) fail(m_pos, fmt::format("expected a rule name, found '{}'", peek()));
        skip_space(false);
        if (m_src.substr(m_pos, 3) != "::=") fail(m_pos, fmt::format("expected '::=' after rule name '{}'", name));
        m_pos += 3;
        skip_space(true);
        uint32_t id = symbol(name, name_at);
        if (m_defined[id])
            fail(name_at, fmt::format("rule '{}' is defined twice (first on line {})", name, m_ir.rules[id].line));
        m_defined[id] = true;
        m_current = id;
        m_ir.rules[id].line = line_of(name_at);
        auto alternatives = parse_alternates(false);
        for (const auto& seq : alternatives) count_elements(seq.size());
        m_ir.rules[id].alternatives = std::move(alternatives);
        skip_space(false);
        if (!at_end() && peek() != '\n' && peek() != '\r')
            fail(m_pos, fmt::format("unexpected '{}' in rule '{}' (expected an element, '|' or the end of the line)",
                                    peek(), name));
        skip_space(true);
    }

    // Rules are defined in text order, so the line count advances incrementally (linear in the text overall).
    int line_of(std::size_t at) {
        for (; m_line_scan < at && m_line_scan < m_src.size(); ++m_line_scan) m_line += m_src[m_line_scan] == '\n';
        return m_line;
    }

    std::vector<IrSequence> parse_alternates(bool nested) {
        std::vector<IrSequence> alternatives;
        alternatives.push_back(parse_sequence(nested));
        for (;;) {
            std::size_t save = m_pos;
            skip_space(true);  // a continuation line may start with '|'
            if (peek() != '|') {
                m_pos = save;
                break;
            }
            ++m_pos;
            skip_space(true);
            alternatives.push_back(parse_sequence(nested));
        }
        return alternatives;
    }

    IrSequence parse_sequence(bool nested) {
        IrSequence seq;
        std::size_t last = 0;  // where the element a postfix operator applies to starts
        while (!at_end()) {
            char c = peek();
            std::size_t at = m_pos;
            if (c == '"') {
                last = seq.size();
                parse_literal(seq);
            } else if (c == '[') {
                last = seq.size();
                seq.push_back(parse_class());
            } else if (is_name_char(c) && c != '.') {
                last = seq.size();
                std::string name = parse_name();
                IrElement e;
                e.is_rule = true;
                e.rule = symbol(name, at);
                seq.push_back(std::move(e));
            } else if (c == '.') {
                last = seq.size();
                ++m_pos;
                IrElement e;
                e.ranges = {{0, kMaxCodePoint}};
                seq.push_back(std::move(e));
            } else if (c == '(') {
                last = seq.size();
                if (++m_depth > kMaxNesting) fail(at, fmt::format("groups nested more than {} deep", kMaxNesting));
                ++m_pos;
                skip_space(true);
                auto alternatives = parse_alternates(true);
                --m_depth;
                skip_space(true);
                if (peek() != ')') fail(m_pos, "expected ')' to close the group opened at " + position(at));
                ++m_pos;
                IrElement e;
                e.is_rule = true;
                e.rule = generated_rule(std::move(alternatives));
                seq.push_back(std::move(e));
            } else if (c == '*' || c == '+' || c == '?') {
                ++m_pos;
                repeat(seq, last, at, c == '+' ? 1 : 0, c == '?' ? 1 : kUnbounded);
            } else if (c == '{') {
                ++m_pos;
                auto [lo, hi] = parse_braces(at);
                repeat(seq, last, at, lo, hi);
            } else {
                break;
            }
            skip_space(nested);
        }
        return seq;
    }

    std::string position(std::size_t at) const {
        int line = 1, column = 1;
        for (std::size_t i = 0; i < at; ++i) {
            if (m_src[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return fmt::format("line {}, column {}", line, column);
    }

    uint32_t parse_number(std::size_t at) {
        uint64_t v = 0;
        std::size_t start = m_pos;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            v = v * 10 + uint64_t(peek() - '0');
            if (v > kMaxRepetition)
                fail(at, fmt::format("repetition count over {} (the limit per repetition)", kMaxRepetition));
            ++m_pos;
        }
        if (m_pos == start) fail(m_pos, "expected a number in the repetition braces");
        return uint32_t(v);
    }

    std::pair<uint32_t, uint32_t> parse_braces(std::size_t at) {
        skip_space(true);
        uint32_t lo = 0, hi = kUnbounded;
        if (peek() == ',') {
            ++m_pos;
            skip_space(true);
            hi = parse_number(at);
        } else {
            lo = parse_number(at);
            skip_space(true);
            if (peek() == ',') {
                ++m_pos;
                skip_space(true);
                if (peek() != '}') hi = parse_number(at);
            } else {
                hi = lo;
            }
        }
        skip_space(true);
        if (peek() != '}') fail(m_pos, "expected '}' to close the repetition");
        ++m_pos;
        if (hi != kUnbounded && hi < lo)
            fail(at, fmt::format("repetition {{{},{}}} has its maximum below its minimum", lo, hi));
        return {lo, hi};
    }

    // seq[last..] is the subject; it becomes min copies followed by a rule for the optional rest.
    void repeat(IrSequence& seq, std::size_t last, std::size_t at, uint32_t min, uint32_t max) {
        if (last >= seq.size()) fail(at, fmt::format("'{}' has nothing to repeat", m_src[at]));
        IrElement subject;
        if (seq.size() - last == 1) {
            subject = std::move(seq[last]);
        } else {
            subject.is_rule = true;
            subject.rule = generated_rule({IrSequence(seq.begin() + std::ptrdiff_t(last), seq.end())});
        }
        seq.resize(last);
        count_elements(std::size_t(min) + (max == kUnbounded ? 2 : 2 * std::size_t(max - min)));
        for (uint32_t i = 0; i < min; ++i) seq.push_back(subject);
        IrElement ref;
        ref.is_rule = true;
        if (max == kUnbounded) {
            // star ::= subject star | ε  (right recursion: stacks do not grow while it repeats)
            ref.rule = generated_rule({});
            m_ir.rules[ref.rule].alternatives = {IrSequence{subject, ref}, IrSequence{}};
            seq.push_back(std::move(ref));
        } else if (max > min) {
            // opt_k ::= subject opt_{k-1} | ε, nested so that at most max - min more copies match.
            ref.rule = generated_rule({IrSequence{subject}, IrSequence{}});
            for (uint32_t k = 1; k < max - min; ++k) {
                IrElement outer;
                outer.is_rule = true;
                outer.rule = generated_rule({IrSequence{subject, ref}, IrSequence{}});
                ref = std::move(outer);
            }
            seq.push_back(std::move(ref));
        }
    }

    uint32_t parse_hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            char c = peek();
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) fail(m_pos, fmt::format("expected {} hex digits in the escape", digits));
            v = v * 16 + uint32_t(d);
            ++m_pos;
        }
        if (v > kMaxCodePoint) fail(m_pos, fmt::format("code point U+{:X} is beyond U+10FFFF", v));
        return v;
    }

    // One code point of a literal or class: an escape or a UTF-8 sequence.
    uint32_t parse_char(const char* what) {
        std::size_t at = m_pos;
        unsigned char c = static_cast<unsigned char>(peek());
        if (c == '\n' || c == '\r') fail(at, fmt::format("unterminated {} (it must end on its line)", what));
        if (c == '\\') {
            ++m_pos;
            char e = peek();
            ++m_pos;
            switch (e) {
                case 'n':
                    return '\n';
                case 'r':
                    return '\r';
                case 't':
                    return '\t';
                case '\\':
                case '"':
                case '\'':
                case '[':
                case ']':
                case '-':
                case '^':
                case '/':
                    return uint32_t(e);
                case 'x':
                    return parse_hex(2);
                case 'u':
                    return parse_hex(4);
                case 'U':
                    return parse_hex(8);
                default:
                    fail(at, fmt::format("unknown escape '\\{}'", e == '\0' ? ' ' : e));
            }
        }
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || m_pos + std::size_t(n) > m_src.size()) fail(at, "invalid UTF-8 in the grammar text");
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (int i = 1; i < n; ++i) {
            unsigned char cc = static_cast<unsigned char>(m_src[m_pos + std::size_t(i)]);
            if ((cc & 0xC0) != 0x80) fail(at, "invalid UTF-8 in the grammar text");
            cp = (cp << 6) | (cc & 0x3F);
        }
        m_pos += std::size_t(n);
        return cp;
    }

    void parse_literal(IrSequence& seq) {
        std::size_t at = m_pos++;
        while (peek() != '"') {
            if (at_end()) fail(at, "unterminated string literal");
            uint32_t cp = parse_char("string literal");
            IrElement e;
            e.ranges = {{cp, cp}};
            seq.push_back(std::move(e));
        }
        ++m_pos;
    }

    IrElement parse_class() {
        std::size_t at = m_pos++;
        bool negated = peek() == '^';
        if (negated) ++m_pos;
        std::vector<CpRange> ranges;
        while (peek() != ']') {
            if (at_end()) fail(at, "unterminated character class");
            uint32_t lo = parse_char("character class"), hi = lo;
            if (peek() == '-' && peek(1) != ']' && m_pos + 1 < m_src.size()) {
                std::size_t dash = m_pos++;
                hi = parse_char("character class");
                if (hi < lo)
                    fail(dash, fmt::format("range U+{:04X}-U+{:04X} in a character class is reversed", lo, hi));
            }
            ranges.push_back({lo, hi});
        }
        ++m_pos;
        IrElement e;
        e.ranges = normalize_ranges(std::move(ranges));
        if (negated) e.ranges = negate_ranges(e.ranges);
        return e;
    }

    std::string_view m_src;
    std::size_t m_pos = 0;
    GrammarIr m_ir;
    std::unordered_map<std::string, uint32_t> m_symbols;
    std::vector<bool> m_defined;
    std::vector<std::size_t> m_first_ref;
    uint32_t m_current = 0;
    std::size_t m_n_elements = 0;
    int m_depth = 0;  // open groups
    std::size_t m_line_scan = 0;
    int m_line = 1;
};

}  // namespace

Result<GrammarIr> parse_gbnf(std::string_view text, std::string_view root) {
    if (text.size() > kMaxGrammarBytes)
        return Status::failure(ErrorCode::too_large, fmt::format("GBNF: the grammar is {} bytes, over the limit of {}",
                                                                 text.size(), kMaxGrammarBytes));
    try {
        return Parser(text).parse(root);
    } catch (const Error& e) {
        return Status::failure(e.code(), e.what());
    } catch (const std::bad_alloc&) {
        return Status::failure(ErrorCode::too_large, "GBNF: out of memory while parsing the grammar");
    }
}

}  // namespace loradesk::grammar
