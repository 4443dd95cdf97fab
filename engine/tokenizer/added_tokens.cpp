// Leftmost-longest matching of added tokens over a byte trie, plus the lstrip/rstrip/single_word rules.
#include "tokenizer/added_tokens.h"

#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

namespace {

uint64_t edge_key(int32_t node, unsigned char b) { return (uint64_t(uint32_t(node)) << 8) | b; }

// Code point ending right before `pos` (pos > 0; text is valid UTF-8).
char32_t code_point_before(std::string_view text, std::size_t pos) {
    std::size_t start = pos - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    return next_code_point(text, start);
}

bool is_word_char(char32_t cp) { return cp == '_' || is_unicode_alnum(cp); }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, const std::vector<std::string>& patterns)
    : m_tokens(std::move(tokens)) {
    for (std::size_t t = 0; t < m_tokens.size(); ++t) {
        const std::string& p = patterns[t];
        if (p.empty()) continue;
        int32_t node = 0;
        for (unsigned char b : p) {
            auto [it, inserted] = m_edges.try_emplace(edge_key(node, b), int32_t(m_terminal.size()));
            if (inserted) m_terminal.push_back(-1);
            node = it->second;
        }
        // Two tokens with the same content: the first one listed wins, as in HF.
        if (m_terminal[std::size_t(node)] < 0) m_terminal[std::size_t(node)] = int32_t(t);
        m_first_byte[static_cast<unsigned char>(p[0])] = true;
    }
}

int AddedTokenMatcher::longest_at(std::string_view text, std::size_t pos, std::size_t* length) const {
    int best = -1;
    int32_t node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
        auto it = m_edges.find(edge_key(node, static_cast<unsigned char>(text[i])));
        if (it == m_edges.end()) break;
        node = it->second;
        if (m_terminal[std::size_t(node)] >= 0) {
            best = m_terminal[std::size_t(node)];
            *length = i + 1 - pos;
        }
    }
    return best;
}

std::vector<TextSplit> AddedTokenMatcher::split(std::string_view text) const {
    std::vector<TextSplit> out;
    std::size_t covered = 0;  // end of the last emitted split
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (!m_first_byte[static_cast<unsigned char>(text[pos])]) {
            ++pos;
            continue;
        }
        std::size_t len = 0;
        int t = longest_at(text, pos, &len);
        if (t < 0) {
            ++pos;
            continue;
        }
        const AddedToken& tok = m_tokens[std::size_t(t)];
        std::size_t start = pos, stop = pos + len;
        if (tok.single_word) {
            bool left_ok = start == 0 || !is_word_char(code_point_before(text, start));
            std::size_t p = stop;
            bool right_ok = stop == text.size() || !is_word_char(next_code_point(text, p));
            if (!left_ok || !right_ok) {
                ++pos;
                continue;
            }
        }
        if (tok.lstrip) {
            // Swallow whitespace on the left, but never what an earlier split already took.
            while (start > covered && is_unicode_whitespace(code_point_before(text, start))) {
                --start;
                while (start > covered && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
            }
        }
        if (tok.rstrip) {
            while (stop < text.size()) {
                std::size_t p = stop;
                if (!is_unicode_whitespace(next_code_point(text, p))) break;
                stop = p;
            }
        }
        if (start > covered) out.push_back({covered, start, -1});
        out.push_back({start, stop, tok.id});
        covered = stop;
        pos = stop;
    }
    if (covered < text.size()) out.push_back({covered, text.size(), -1});
    return out;
}

}  // namespace loradesk::tokenizer
