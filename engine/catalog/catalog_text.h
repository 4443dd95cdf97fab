// Comma-separated list columns of the catalog (targets, layers): how lists are written and read back.
// Internal to engine/catalog.
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace loradesk::catalog {

template <class T>
std::string join_list(const std::vector<T>& items) {
    std::string out;
    for (auto& x : items) {
        if (!out.empty()) out += ',';
        out += fmt::format("{}", x);
    }
    return out;
}

inline std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t j = text.find(',', i);
        if (j == std::string::npos) j = text.size();
        if (j > i) out.push_back(text.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

inline std::vector<int> split_int_list(const std::string& text) {
    std::vector<int> out;
    for (auto& s : split_list(text)) out.push_back(std::atoi(s.c_str()));
    return out;
}

}  // namespace loradesk::catalog
