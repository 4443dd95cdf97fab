// Small text helpers shared by the streaming parsers (reasoning_splitter, tool_call_parser): what part of a
// buffer may still become a marker, and leading whitespace. Header-only.
#pragma once

#include <algorithm>
#include <string_view>

namespace loradesk::server {

// Length of the longest suffix of `text` that is a proper prefix of `marker`: it may still become the
// marker, so a streaming parser holds it back.
inline std::size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
    for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

inline std::size_t leading_space(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    return b == std::string_view::npos ? s.size() : b;
}

}  // namespace loradesk::server
