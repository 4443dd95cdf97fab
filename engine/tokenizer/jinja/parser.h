// Recursive-descent parser from tokens to the syntax tree, following jinja2/parser.py's grammar and
// precedence (filters and tests bind tighter than arithmetic: `xs|length - 1` is `(xs|length) - 1`).
#pragma once

#include <string_view>

#include "tokenizer/jinja/ast.h"

namespace loradesk::jinja {

// Throws TemplateError with the line and column of the offending token.
Body parse_template(std::string_view source);

}  // namespace loradesk::jinja
