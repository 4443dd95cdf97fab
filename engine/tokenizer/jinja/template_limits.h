// Bounds on parsing and rendering a template, so that a hostile or broken chat template (a model folder is
// untrusted input) fails with a TemplateError instead of overflowing the stack, hanging a request or exhausting
// memory. Real chat templates stay far below them: they nest a few levels, loop over the messages and tools once
// or twice and print a few kilobytes per message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace loradesk::jinja {

// Nested expressions and blocks while parsing: the parser and the interpreter recurse once per level, and
// "((((..." a few thousand deep overflowed the stack. CPython's own parser stops at 200 nested parentheses.
constexpr int kMaxNesting = 200;
// Loop iterations plus macro calls in one render. Jinja2's sandbox caps range() at 100,000 items but not
// nested loops. A 20,000-message conversation looped over three times, plus 100 tools of 50 parameters, stays
// below; reaching it costs ~0.2 s in a release build (a few seconds under ASan, which the tests must afford).
constexpr std::int64_t kMaxRenderSteps = 250'000;
// Longest string or list one operation may build (repetition, concatenation, padding) and longest output.
constexpr std::size_t kMaxRenderBytes = std::size_t(16) << 20;

// Characters of a string iterated one by one (for c in s, s|join, s|list): each becomes a Value of its own,
// about 100 bytes, so a 16 MiB string took over 2 GB (found by fuzz_jinja as out-of-memory).
constexpr std::size_t kMaxIteratedChars = std::size_t(1) << 20;

// A width that sizes a string (center, indent, tojson's indent, "%10s"): refused past kMaxRenderBytes before
// anything is allocated.
inline std::size_t checked_width(std::int64_t width, const char* what) {
    if (width > std::int64_t(kMaxRenderBytes))
        fail(std::string(what) + " width " + std::to_string(width) + " is too large (the sandbox allows at most " +
             std::to_string(kMaxRenderBytes) + ")");
    return width < 0 ? 0 : std::size_t(width);
}

// Appends to a string that filters build piece by piece (join, replace, indent): each multiplies its input by
// a separator's length, so chaining a few reached gigabytes before any single value was checked.
inline void append_checked(std::string& out, std::string_view piece) {
    if (out.size() + piece.size() > kMaxRenderBytes)
        fail("string too large: the sandbox allows at most " + std::to_string(kMaxRenderBytes) + " bytes");
    out += piece;
}

}  // namespace loradesk::jinja
