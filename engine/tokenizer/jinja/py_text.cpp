// Python text behaviour: UTF-8, float/string repr, Unicode case mapping, json.dumps and %-formatting.
// Case mapping and character classes use glibc's C.UTF-8 tables (a private locale object, never the
// global locale); they agree with Python for the scripts chat templates meet, not for special casings
// such as 'ß'.upper() == 'SS'.
#include "tokenizer/jinja/py_text.h"

#include <locale.h>
#include <wctype.h>
#include <algorithm>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/template_limits.h"
#include "tokenizer/jinja/value.h"

namespace loradesk::jinja {

namespace {

locale_t utf8_locale() {
    static locale_t loc = [] {
        locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
        return l ? l : newlocale(LC_CTYPE_MASK, "C", static_cast<locale_t>(nullptr));
    }();
    return loc;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
    out += buf;
}

}  // namespace

std::u32string utf8_decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        int n = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
        if (n < 0 || i + static_cast<std::size_t>(n) >= s.size()) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        char32_t c = n == 0 ? b : n == 1 ? (b & 0x1F) : n == 2 ? (b & 0x0F) : (b & 0x07);
        bool ok = true;
        for (int k = 1; k <= n; ++k) {
            auto cb = static_cast<unsigned char>(s[i + k]);
            if ((cb & 0xC0) != 0x80) {
                ok = false;
                break;
            }
            c = (c << 6) | (cb & 0x3F);
        }
        if (!ok) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        out += c;
        i += n + 1;
    }
    return out;
}

std::string utf8_encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci = [-]D[.DDD]e[+-]XX: split into sign, significant digits and decimal exponent.
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    auto e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    int exp = std::stoi(sci.substr(e + 1));
    if (exp >= -4 && exp < 16) {
        std::string out;
        if (exp < 0) {
            out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exp + 1) {
            out = digits + std::string(static_cast<std::size_t>(exp + 1 - static_cast<int>(digits.size())), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<std::size_t>(exp + 1)) + "." +
                  digits.substr(static_cast<std::size_t>(exp + 1));
        }
        return sign + out;
    }
    std::string mant = digits.size() == 1 ? digits : digits.substr(0, 1) + "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + mant + ebuf;
}

std::string string_repr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : utf8_decode(s)) {
        if (c == static_cast<char32_t>(quote) || c == U'\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == U'\n') {
            out += "\\n";
        } else if (c == U'\r') {
            out += "\\r";
        } else if (c == U'\t') {
            out += "\\t";
        } else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) {
            append_hex(out, "\\x", static_cast<unsigned>(c), 2);
        } else {
            append_utf8(out, c);
        }
    }
    out += quote;
    return out;
}

bool py_isspace(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
bool py_isalpha(char32_t c) {
    return c < 0x80 ? std::isalpha(static_cast<int>(c)) != 0 : iswalpha_l(c, utf8_locale()) != 0;
}
bool py_isdigit(char32_t c) { return c < 0x80 ? (c >= '0' && c <= '9') : iswdigit_l(c, utf8_locale()) != 0; }
bool py_isalnum(char32_t c) { return py_isalpha(c) || py_isdigit(c); }
char32_t py_upper(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    return static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), utf8_locale()));
}
char32_t py_lower(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), utf8_locale()));
}

std::string str_upper(std::string_view s) {
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = py_upper(c);
    return utf8_encode(u);
}
std::string str_lower(std::string_view s) {
    std::u32string u = utf8_decode(s);
    std::u32string out(u.size(), U'\0');
    for (std::size_t i = 0; i < u.size(); ++i) {
        // Python applies the Final_Sigma rule: a capital sigma ending a word lowers to 'ς'.
        bool final_sigma =
            u[i] == U'\u03A3' && i > 0 && py_isalpha(u[i - 1]) && (i + 1 == u.size() || !py_isalpha(u[i + 1]));
        out[i] = final_sigma ? U'\u03C2' : py_lower(u[i]);
    }
    return utf8_encode(out);
}

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (char32_t c : utf8_decode(s)) {
        switch (c) {
            case U'"':
                out += "\\\"";
                break;
            case U'\\':
                out += "\\\\";
                break;
            case U'\n':
                out += "\\n";
                break;
            case U'\r':
                out += "\\r";
                break;
            case U'\t':
                out += "\\t";
                break;
            case U'\b':
                out += "\\b";
                break;
            case U'\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
                    if (c >= 0x10000) {
                        char32_t v = c - 0x10000;
                        append_hex(out, "\\u", 0xD800 + (v >> 10), 4);
                        append_hex(out, "\\u", 0xDC00 + (v & 0x3FF), 4);
                    } else {
                        append_hex(out, "\\u", static_cast<unsigned>(c), 4);
                    }
                } else {
                    append_utf8(out, c);
                }
        }
    }
    out += '"';
}

std::string json_key(const Value& k) {
    switch (k.kind()) {
        case Kind::string:
            return k.str();
        case Kind::none:
            return "null";
        case Kind::boolean:
            return k.as_bool() ? "true" : "false";
        case Kind::integer:
            return std::to_string(k.as_int());
        case Kind::floating:
            return float_repr(k.as_double());
        default:
            fail("keys must be str, int, float, bool or None, not " + k.type_name());
    }
}

void dump(std::string& out, const Value& v, const JsonOptions& o, int depth) {
    auto newline = [&](int level) {
        if (!o.indent) return;
        out += '\n';
        for (int i = 0; i < level; ++i) out += *o.indent;
    };
    switch (v.kind()) {
        case Kind::none:
            out += "null";
            return;
        case Kind::boolean:
            out += v.as_bool() ? "true" : "false";
            return;
        case Kind::integer:
            out += std::to_string(v.as_int());
            return;
        case Kind::floating: {
            double d = v.as_double();
            out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
            return;
        }
        case Kind::string:
            json_string(out, v.str(), o.ensure_ascii);
            return;
        case Kind::list:
        case Kind::tuple: {
            if (v.items().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (std::size_t i = 0; i < v.items().size(); ++i) {
                if (i) out += o.item_separator;
                newline(depth + 1);
                dump(out, v.items()[i], o, depth + 1);
            }
            newline(depth);
            out += ']';
            return;
        }
        case Kind::dict: {
            if (v.dict_ref().items.empty()) {
                out += "{}";
                return;
            }
            std::vector<std::pair<std::string, const Value*>> entries;
            for (auto& [k, val] : v.dict_ref().items) entries.emplace_back(json_key(k), &val);
            if (o.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.first < b.first; });
            out += '{';
            for (std::size_t i = 0; i < entries.size(); ++i) {
                if (i) out += o.item_separator;
                newline(depth + 1);
                json_string(out, entries[i].first, o.ensure_ascii);
                out += o.key_separator;
                dump(out, *entries[i].second, o, depth + 1);
            }
            newline(depth);
            out += '}';
            return;
        }
        default:
            fail("Object of type " + v.type_name() + " is not JSON serializable");
    }
}

std::string format_one(char conv, const std::string& flags, int width, int precision, const Value& arg) {
    std::string body;
    auto number_arg = [&]() {
        if (!arg.is_number())
            fail("%" + std::string(1, conv) + " format: a real number is required, not " + arg.type_name());
    };
    char buf[512];
    // Numeric conversions let printf apply flags and width (zero padding, sign); strings pad below.
    std::string cflags = flags + (width > 0 ? std::to_string(width) : std::string());
    switch (conv) {
        case 's':
            body = arg.to_str();
            break;
        case 'r':
        case 'a':
            body = arg.repr();
            break;
        case 'd':
        case 'i':
        case 'u': {
            number_arg();
            long long n = arg.is_float() ? static_cast<long long>(std::trunc(arg.as_double())) : arg.as_int();
            std::snprintf(buf, sizeof buf, ("%" + cflags + "lld").c_str(), n);
            body = buf;
            width = 0;
            break;
        }
        case 'x':
        case 'X':
        case 'o':
            if (!arg.is_int() && !arg.is_bool())
                fail("%" + std::string(1, conv) + " format: an integer is required, not " + arg.type_name());
            std::snprintf(buf, sizeof buf, ("%" + cflags + "ll" + std::string(1, conv)).c_str(), arg.as_int());
            body = buf;
            width = 0;
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
            number_arg();
            std::snprintf(buf, sizeof buf,
                          ("%" + cflags + "." + std::to_string(precision < 0 ? 6 : precision) + conv).c_str(),
                          arg.as_double());
            body = buf;
            precision = -1;
            width = 0;
            break;
        case 'c':
            if (arg.is_string())
                body = arg.str();
            else
                body = utf8_encode(std::u32string(1, static_cast<char32_t>(arg.as_int())));
            break;
        default:
            fail(std::string("unsupported format character '") + conv + "'");
    }
    if ((conv == 's' || conv == 'r' || conv == 'a') && precision >= 0) {
        std::u32string u = utf8_decode(body);
        if (static_cast<int>(u.size()) > precision)
            body = utf8_encode(u.substr(0, static_cast<std::size_t>(precision)));
    }
    int len = static_cast<int>(utf8_decode(body).size());
    if (width > len) {
        bool left = flags.find('-') != std::string::npos;
        std::string pad(static_cast<std::size_t>(width - len), ' ');
        body = left ? body + pad : pad + body;
    }
    return body;
}

}  // namespace

std::string json_dumps(const Value& v, const JsonOptions& options) {
    std::string out;
    dump(out, v, options, 0);
    return out;
}

std::string percent_format(std::string_view fmt, const Value& args) {
    ValueList list = args.kind() == Kind::tuple ? args.items() : ValueList{args};
    std::size_t next = 0;
    std::string out;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) fail("incomplete format");
        if (fmt[i] == '%') {
            out += '%';
            continue;
        }
        std::string flags;
        while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
        int width = 0;
        // Checked per digit: "%99999999999d" overflowed int (UB) and then asked printf for gigabytes.
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
            width = int(checked_width(std::int64_t(width) * 10 + (fmt[i++] - '0'), "format"));
        int precision = -1;
        if (i < fmt.size() && fmt[i] == '.') {
            precision = 0;
            ++i;
            while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
                precision = int(checked_width(std::int64_t(precision) * 10 + (fmt[i++] - '0'), "format precision"));
        }
        if (i >= fmt.size()) fail("incomplete format");
        if (next >= list.size()) fail("not enough arguments for format string");
        out += format_one(fmt[i], flags, width, precision, list[next++]);
    }
    if (next < list.size()) fail("not all arguments converted during string formatting");
    return out;
}

}  // namespace loradesk::jinja
