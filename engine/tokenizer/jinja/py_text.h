// Python text behaviour the interpreter needs: UTF-8 <-> code points, float repr, string repr, str.upper
// and friends, json.dumps with transformers' tojson options, and the % string-formatting operator.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loradesk::jinja {

class Value;

std::u32string utf8_decode(std::string_view s);  // invalid bytes become U+FFFD
std::string utf8_encode(std::u32string_view s);
bool is_ascii(std::string_view s);

std::string float_repr(double d);             // Python repr(float): 1.0, 0.1, 1e+20, inf, nan
std::string string_repr(std::string_view s);  // Python repr(str): 'it' or "it's"

bool py_isspace(char32_t c);
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
bool py_isalnum(char32_t c);
char32_t py_upper(char32_t c);
char32_t py_lower(char32_t c);
std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);

struct JsonOptions {
    std::optional<std::string> indent;  // None: one line; otherwise a newline plus this per level
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};
std::string json_dumps(const Value& v, const JsonOptions& options);

// Python's `fmt % args` for %s %r %d %i %f %e %g %x %o %c %% with flags, width and precision.
std::string percent_format(std::string_view fmt, const Value& args);

}  // namespace loradesk::jinja
