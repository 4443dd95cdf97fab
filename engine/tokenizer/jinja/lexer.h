// Jinja2 lexer configured as transformers configures it: trim_blocks, lstrip_blocks, `-`/`+` whitespace
// control on every tag, comments dropped, raw blocks passed through as text, \r\n normalised and a single
// trailing newline removed (keep_trailing_newline=False). Produces a flat token list for the parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loradesk::jinja {

enum class TokenType { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct Token {
    TokenType type;
    std::string text;  // text data, name, operator or decoded string literal
    int line = 1;
    int column = 1;
    std::int64_t int_value = 0;
    double float_value = 0.0;
};

// Throws TemplateError (template_error.h) on unterminated tags, strings or comments.
std::vector<Token> tokenize(std::string_view source);

}  // namespace loradesk::jinja
