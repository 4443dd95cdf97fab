// Reading test inputs by path: a file's whole text, and files of the source tree (real chat templates).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace loradesk::test {

inline std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::string source(const char* rel) { return read_file(std::string(LORADESK_SOURCE_DIR) + "/" + rel); }

}  // namespace loradesk::test
