// Command-line helpers of the GPU kernel benchmarks.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace loradesk::kernels::test {

// argv[i] as "1,8,32" -> {1, 8, 32}; an empty or missing argument gives the defaults. Anything but positive numbers
// separated by commas ends the program (exit 2) with a message naming `program`.
inline std::vector<int> int_list(const char* program, int argc, char** argv, int i, std::vector<int> defaults) {
    if (i >= argc || !*argv[i]) return defaults;
    std::vector<int> out;
    for (const char* s = argv[i]; *s;) {
        char* end = nullptr;
        const long v = std::strtol(s, &end, 10);
        if (end == s || v <= 0) {
            std::fprintf(stderr, "%s: '%s' is not a comma-separated list of positive numbers\n", program, argv[i]);
            std::exit(2);
        }
        out.push_back(int(v));
        s = *end == ',' ? end + 1 : end;
    }
    return out;
}

}  // namespace loradesk::kernels::test
