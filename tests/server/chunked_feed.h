// Test helper for the streaming chat parsers: runs a parser over a text cut into chunks, in the chunkings
// the parser tests compare with the whole-text answer: fixed 1, 2 and 3-byte chunks at every phase, every
// cut into two pieces, and 300 seeded random chunkings of 1..3-byte pieces. (All chunkings into 1..3-byte
// pieces are exponentially many; these cover every marker boundary at every offset.)
#pragma once

#include <random>
#include <string>
#include <vector>

namespace loradesk::testing {

inline std::vector<std::vector<std::string>> parser_chunkings(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    for (std::size_t k = 1; k <= 3; ++k) {
        for (std::size_t first = 1; first <= k; ++first) {
            std::vector<std::string> pieces;
            for (std::size_t at = 0; at < text.size();) {
                const std::size_t n = at == 0 ? first : k;
                pieces.push_back(text.substr(at, n));
                at += n;
            }
            out.push_back(std::move(pieces));
        }
    }
    for (std::size_t cut = 0; cut <= text.size(); ++cut) out.push_back({text.substr(0, cut), text.substr(cut)});
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> size(1, 3);
    for (int r = 0; r < 300; ++r) {
        std::vector<std::string> pieces;
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t n = std::size_t(size(rng));
            pieces.push_back(text.substr(at, n));
            at += n;
        }
        out.push_back(std::move(pieces));
    }
    return out;
}

}  // namespace loradesk::testing
