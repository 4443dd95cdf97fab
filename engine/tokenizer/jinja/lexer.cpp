// Jinja2 lexer (trim_blocks + lstrip_blocks). The whitespace rules mirror jinja2/lexer.py: `{%-` strips
// all whitespace before the tag, lstrip removes spaces/tabs between a line start and a block or comment
// tag (never a `{{` tag), `-%}` strips all whitespace after, and trim_blocks drops one newline after a
// block or comment tag.
#include "tokenizer/jinja/lexer.h"

#include <algorithm>

#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/template_error.h"

namespace loradesk::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

const char* const kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "[",
                                  "]",  "(",  ")",  "{",  "}",  "<",  ">", "=", ".", ":", ",", "|", ";"};

class Lexer {
  public:
    explicit Lexer(std::string_view source) {
        // Jinja2 normalises every line ending to \n and, with keep_trailing_newline=False, drops one final \n.
        m_src.reserve(source.size());
        for (std::size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                m_src += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                m_src += source[i];
            }
        }
        if (!m_src.empty() && m_src.back() == '\n') m_src.pop_back();
        m_line_starts.push_back(0);
        for (std::size_t i = 0; i < m_src.size(); ++i)
            if (m_src[i] == '\n') m_line_starts.push_back(i + 1);
    }

    std::vector<Token> run() {
        std::size_t pos = 0;
        bool line_starting = true;
        const std::size_t n = m_src.size();
        while (pos < n) {
            std::size_t tag = find_tag(pos);
            if (tag == std::string::npos) {
                emit_text(pos, m_src.substr(pos));
                break;
            }
            char kind = m_src[tag + 1];
            char mod = tag + 2 < n && (m_src[tag + 2] == '-' || m_src[tag + 2] == '+') ? m_src[tag + 2] : 0;
            std::string text = m_src.substr(pos, tag - pos);
            strip_before(text, mod, kind != '{', line_starting);
            emit_text(pos, std::move(text));
            std::size_t p = tag + 2 + (mod ? 1 : 0);
            if (kind == '#') {
                pos = lex_comment(tag, p);
            } else if (kind == '%' && is_raw_begin(p)) {
                pos = lex_raw(p);
            } else {
                pos = lex_tag(tag, p, kind == '%');
            }
            line_starting = pos > 0 && m_src[pos - 1] == '\n';
        }
        m_tokens.push_back(make(TokenType::eof, {}, m_src.size()));
        return std::move(m_tokens);
    }

  private:
    std::size_t find_tag(std::size_t from) const {
        for (std::size_t i = m_src.find('{', from); i != std::string::npos; i = m_src.find('{', i + 1))
            if (i + 1 < m_src.size() && (m_src[i + 1] == '{' || m_src[i + 1] == '%' || m_src[i + 1] == '#')) return i;
        return std::string::npos;
    }

    void strip_before(std::string& text, char mod, bool lstrip_applies, bool line_starting) const {
        if (mod == '-') {
            std::size_t end = text.size();
            while (end > 0 && is_ws(text[end - 1])) --end;
            text.resize(end);
        } else if (mod != '+' && lstrip_applies) {
            std::size_t nl = text.rfind('\n');
            std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
                std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), is_ws))
                text.resize(l_pos);
        }
    }

    // After a tag's closing delimiter: `-` eats all whitespace, trim_blocks eats one newline.
    std::size_t skip_after(std::size_t pos, char end_mod, bool trim) const {
        if (end_mod == '-') {
            while (pos < m_src.size() && is_ws(m_src[pos])) ++pos;
        } else if (end_mod != '+' && trim && pos < m_src.size() && m_src[pos] == '\n') {
            ++pos;
        }
        return pos;
    }

    std::size_t lex_comment(std::size_t tag, std::size_t p) {
        std::size_t e = m_src.find("#}", p);
        if (e == std::string::npos) error("unterminated comment: '{#' has no matching '#}'", tag);
        char end_mod = e > p && (m_src[e - 1] == '-' || m_src[e - 1] == '+') ? m_src[e - 1] : 0;
        return skip_after(e + 2, end_mod, true);
    }

    bool is_raw_begin(std::size_t p) const {
        while (p < m_src.size() && is_ws(m_src[p])) ++p;
        if (m_src.compare(p, 3, "raw") != 0 || (p + 3 < m_src.size() && is_ident(m_src[p + 3]))) return false;
        p += 3;
        while (p < m_src.size() && is_ws(m_src[p])) ++p;
        return m_src.compare(p, 2, "%}") == 0 || m_src.compare(p, 3, "-%}") == 0;
    }

    std::size_t lex_raw(std::size_t p) {
        std::size_t start = p;
        std::size_t close = m_src.find("%}", p);
        bool dash = m_src[close - 1] == '-';
        std::size_t body = skip_after(close + 2, dash ? '-' : '+', false);  // no trim_blocks after {% raw %}
        for (std::size_t i = m_src.find("{%", body); i != std::string::npos; i = m_src.find("{%", i + 2)) {
            std::size_t q = i + 2;
            char mod = q < m_src.size() && (m_src[q] == '-' || m_src[q] == '+') ? m_src[q++] : 0;
            while (q < m_src.size() && is_ws(m_src[q])) ++q;
            if (m_src.compare(q, 6, "endraw") != 0) continue;
            q += 6;
            while (q < m_src.size() && is_ws(m_src[q])) ++q;
            char end_mod = q < m_src.size() && (m_src[q] == '-' || m_src[q] == '+') ? m_src[q++] : 0;
            if (m_src.compare(q, 2, "%}") != 0) continue;
            std::string text = m_src.substr(body, i - body);
            strip_before(text, mod, true, body > 0 && m_src[body - 1] == '\n');
            emit_text(body, std::move(text));
            return skip_after(q + 2, end_mod, true);
        }
        error("missing '{% endraw %}' for this raw block", start);
    }

    std::size_t lex_tag(std::size_t tag, std::size_t p, bool block) {
        m_tokens.push_back(make(block ? TokenType::block_begin : TokenType::var_begin, {}, tag));
        int depth = 0;
        const char* close = block ? "%}" : "}}";
        const std::size_t n = m_src.size();
        while (true) {
            while (p < n && is_ws(m_src[p])) ++p;
            if (p >= n)
                error(block ? "unexpected end of template: '{%' has no matching '%}'"
                            : "unexpected end of template: '{{' has no matching '}}'",
                      tag);
            if (depth == 0) {
                char mod = (m_src[p] == '-' || m_src[p] == '+') ? m_src[p] : 0;
                if (m_src.compare(p + (mod ? 1 : 0), 2, close) == 0 && !(mod == '+' && !block)) {
                    m_tokens.push_back(make(block ? TokenType::block_end : TokenType::var_end, {}, p));
                    return skip_after(p + (mod ? 1 : 0) + 2, mod, block);
                }
            }
            char c = m_src[p];
            if (is_ident_start(c)) {
                std::size_t s = p;
                while (p < n && is_ident(m_src[p])) ++p;
                m_tokens.push_back(make(TokenType::name, m_src.substr(s, p - s), s));
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                p = lex_number(p);
            } else if (c == '\'' || c == '"') {
                p = lex_string(p);
            } else {
                std::string op;
                for (const char* o : kOperators)
                    if (m_src.compare(p, std::char_traits<char>::length(o), o) == 0) {
                        op = o;
                        break;
                    }
                if (op.empty()) error(std::string("unexpected character '") + c + "'", p);
                if (op == "(" || op == "[" || op == "{") ++depth;
                if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
                m_tokens.push_back(make(TokenType::op, op, p));
                p += op.size();
            }
        }
    }

    std::size_t lex_number(std::size_t p) {
        std::size_t s = p;
        auto digits = [&] {
            while (p < m_src.size() && (std::isdigit(static_cast<unsigned char>(m_src[p])) || m_src[p] == '_')) ++p;
        };
        digits();
        bool is_float = false;
        // A float cannot follow '.', so `xs.0.1` stays two integer subscripts (Jinja2's (?<!\.) rule).
        bool after_dot = !m_tokens.empty() && m_tokens.back().type == TokenType::op && m_tokens.back().text == ".";
        if (!after_dot && p + 1 < m_src.size() && m_src[p] == '.' &&
            std::isdigit(static_cast<unsigned char>(m_src[p + 1]))) {
            is_float = true;
            ++p;
            digits();
        }
        if (!after_dot && p < m_src.size() && (m_src[p] == 'e' || m_src[p] == 'E')) {
            std::size_t q = p + 1;
            if (q < m_src.size() && (m_src[q] == '+' || m_src[q] == '-')) ++q;
            if (q < m_src.size() && std::isdigit(static_cast<unsigned char>(m_src[q]))) {
                is_float = true;
                p = q;
                digits();
            }
        }
        std::string text = m_src.substr(s, p - s);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        Token t = make(is_float ? TokenType::floating : TokenType::integer, text, s);
        try {
            if (is_float)
                t.float_value = std::stod(text);
            else
                t.int_value = std::stoll(text);
        } catch (const std::exception&) {
            error("number literal '" + text + "' is out of range", s);
        }
        m_tokens.push_back(std::move(t));
        return p;
    }

    std::size_t lex_string(std::size_t p) {
        std::size_t s = p;
        char q = m_src[p++];
        std::string out;
        while (true) {
            if (p >= m_src.size()) error("unterminated string literal", s);
            char c = m_src[p++];
            if (c == q) break;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p >= m_src.size()) error("unterminated string literal", s);
            char e = m_src[p++];
            // Exactly `count` hex digits, as Python requires: std::stoul threw std::invalid_argument on '\xzz' (found
            // by fuzz_jinja) and accepted '\x 1' or '\x1z'.
            auto hex = [&](int count) {
                if (p + static_cast<std::size_t>(count) > m_src.size())
                    error("truncated \\x/\\u escape in string literal", p);
                char32_t v = 0;
                for (int i = 0; i < count; ++i) {
                    char h = m_src[p + static_cast<std::size_t>(i)];
                    int d = h >= '0' && h <= '9'   ? h - '0'
                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                   : -1;
                    if (d < 0) error("truncated \\x/\\u escape in string literal", p);
                    v = v * 16 + static_cast<char32_t>(d);
                }
                if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) error("escape is not a Unicode character", p);
                p += static_cast<std::size_t>(count);
                out += utf8_encode(std::u32string(1, v));
            };
            switch (e) {
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '\'':
                    out += '\'';
                    break;
                case '"':
                    out += '"';
                    break;
                case 'a':
                    out += '\a';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'v':
                    out += '\v';
                    break;
                case '\n':
                    break;
                case 'x':
                    hex(2);
                    break;
                case 'u':
                    hex(4);
                    break;
                case 'U':
                    hex(8);
                    break;
                default:
                    if (e >= '0' && e <= '7') {
                        int v = e - '0';
                        for (int k = 0; k < 2 && p < m_src.size() && m_src[p] >= '0' && m_src[p] <= '7'; ++k)
                            v = v * 8 + (m_src[p++] - '0');
                        out += utf8_encode(std::u32string(1, static_cast<char32_t>(v)));
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        m_tokens.push_back(make(TokenType::string, std::move(out), s));
        return p;
    }

    void emit_text(std::size_t pos, std::string text) {
        if (!text.empty()) m_tokens.push_back(make(TokenType::text, std::move(text), pos));
    }

    Token make(TokenType type, std::string text, std::size_t pos) const {
        Token t{type, std::move(text)};
        auto it = std::upper_bound(m_line_starts.begin(), m_line_starts.end(), pos);
        t.line = static_cast<int>(it - m_line_starts.begin());
        t.column = static_cast<int>(pos - *(it - 1)) + 1;
        return t;
    }

    [[noreturn]] void error(const std::string& message, std::size_t pos) const {
        Token t = make(TokenType::eof, {}, std::min(pos, m_src.size()));
        throw TemplateError(message, t.line, t.column);
    }

    std::string m_src;
    std::vector<std::size_t> m_line_starts;
    std::vector<Token> m_tokens;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace loradesk::jinja
