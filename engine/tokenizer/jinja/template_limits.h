// Bounds on parsing and rendering a template, so that a hostile or broken chat template (a model folder is
// untrusted input) fails with a TemplateError instead of overflowing the stack, hanging a request or exhausting
// memory. Real chat templates stay far below them: they nest a few levels, loop over the messages and tools once
// or twice and print a few kilobytes per message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loradesk::jinja {

// Nested expressions and blocks while parsing: the parser and the interpreter recurse once per level, and
// "((((..." a few thousand deep overflowed the stack. CPython's own parser stops at 200 nested parentheses.
constexpr int kMaxNesting = 200;
// Loop iterations plus macro calls in one render. Jinja2's sandbox caps range() at 100,000 items but not
// nested loops; 1 M steps is a few seconds at worst (under ASan) and 100x what a 1,000-message chat needs.
constexpr std::int64_t kMaxRenderSteps = 1'000'000;
// Longest string or list one operation may build (repetition, concatenation, padding) and longest output.
constexpr std::size_t kMaxRenderBytes = std::size_t(16) << 20;

}  // namespace loradesk::jinja
