// SchemaCompiler for strings (lengths, formats) and numbers (bounds). Bounds are read in both the draft 4 form
// (exclusiveMinimum: true beside minimum) and the draft 6+ form (exclusiveMinimum: <number>).
#include <fmt/format.h>

#include <cmath>

#include "grammar/gbnf_text.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_primitives.h"

namespace loradesk::grammar::json_schema {
namespace {

constexpr std::string_view kQuote = R"("\"")";

// An exact bound value: integers stay exact even beyond 2^53.
struct RawBound {
    double value = 0;
    std::optional<std::int64_t> exact;  // set when the JSON number is an integer within int64
    bool exclusive = false;
};

RawBound raw_bound(const Json& v, const char* key, const std::string& path) {
    if (!v.is_number()) fail(fmt::format("'{}' at {} must be a number", key, path_text(path)));
    RawBound b;
    b.value = v.get<double>();
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX))
        b.exact = v.get<std::int64_t>();
    else if (std::floor(b.value) == b.value && std::abs(b.value) <= static_cast<double>(kMaxBound))
        b.exact = static_cast<std::int64_t>(b.value);
    return b;
}

// The stricter of two lower (or upper) bounds.
std::optional<RawBound> stricter(std::optional<RawBound> a, std::optional<RawBound> b, bool lower) {
    if (!a) return b;
    if (!b) return a;
    if (a->value != b->value) return (a->value > b->value) == lower ? a : b;
    return a->exclusive ? a : b;
}

std::optional<RawBound> read_side(const Json& schema, const std::string& path, bool lower) {
    const char* inclusive_key = lower ? "minimum" : "maximum";
    const char* exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::optional<RawBound> inclusive, exclusive;
    if (auto it = schema.find(inclusive_key); it != schema.end()) inclusive = raw_bound(*it, inclusive_key, path);
    if (auto it = schema.find(exclusive_key); it != schema.end()) {
        if (it->is_boolean()) {
            if (inclusive && it->get<bool>()) inclusive->exclusive = true;  // draft 4
        } else {
            exclusive = raw_bound(*it, exclusive_key, path);
            exclusive->exclusive = true;
        }
    }
    return stricter(inclusive, exclusive, lower);
}

std::string key_of(bool lower, bool exclusive) {
    return lower ? (exclusive ? "exclusiveMinimum" : "minimum") : (exclusive ? "exclusiveMaximum" : "maximum");
}

}  // namespace

std::pair<std::optional<NumberBound>, std::optional<NumberBound>> SchemaCompiler::read_bounds(const Json& schema,
                                                                                              const std::string& path,
                                                                                              bool integer) const {
    std::optional<NumberBound> out[2];
    for (int side = 0; side < 2; ++side) {
        const bool lower = side == 0;
        const auto raw = read_side(schema, path, lower);
        if (!raw) continue;
        const std::string key = key_of(lower, raw->exclusive);
        if (std::abs(raw->value) > static_cast<double>(kMaxBound))
            fail(fmt::format("'{}' at {} is beyond +-1e18, which structured outputs do not support", key,
                             path_text(path)));
        if (integer) {
            // Integer bounds become inclusive integers: x > 2.5 is x >= 3, x < 3 is x <= 2.
            double v = raw->exact ? static_cast<double>(*raw->exact) : raw->value;
            std::int64_t b = raw->exact ? *raw->exact : static_cast<std::int64_t>(lower ? std::ceil(v) : std::floor(v));
            if (raw->exclusive) {
                if (!raw->exact)
                    b = static_cast<std::int64_t>(lower ? std::floor(v) + 1 : std::ceil(v) - 1);
                else
                    b += lower ? 1 : -1;
            }
            out[side] = NumberBound{b, false};
        } else {
            if (!raw->exact)
                fail(
                    fmt::format("'{}' at {} is not an integer: bounds on type number are supported when they are "
                                "integers; use type integer or round the bound",
                                key, path_text(path)));
            out[side] = NumberBound{*raw->exact, raw->exclusive};
        }
    }
    return {out[0], out[1]};
}

std::optional<std::size_t> SchemaCompiler::count_keyword(const Json& schema, const char* key,
                                                         const std::string& path) const {
    auto it = schema.find(key);
    if (it == schema.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
        fail(fmt::format("'{}' at {} must be a non-negative integer", key, path_text(path)));
    if (it->get<std::uint64_t>() > kMaxRepeat) {
        if (std::string_view(key).starts_with("max")) return kMaxRepeat;
        fail(fmt::format("'{}' at {} is {}, above the supported {}", key, path_text(path), it->get<std::uint64_t>(),
                         kMaxRepeat));
    }
    return it->get<std::size_t>();
}

std::string SchemaCompiler::visit_string(const Json& schema, const std::string& path, const std::string& hint) {
    const auto min_length = count_keyword(schema, "minLength", path);
    const auto max_length = count_keyword(schema, "maxLength", path);
    if (min_length && max_length && *min_length > *max_length)
        fail(fmt::format("minLength is above maxLength at {}", path_text(path)));
    if (auto it = schema.find("format"); it != schema.end()) {
        if (!it->is_string()) fail(fmt::format("'format' at {} must be a string", path_text(path)));
        const auto format = string_format(it->get<std::string>());
        if (!format)
            fail(fmt::format("unsupported string format '{}' at {}/format (supported: {})", it->get<std::string>(),
                             path, supported_formats()));
        if (!format->rule.empty()) {
            std::string_view rule = format->rule;
            if (auto p = schema.find("pattern"); p != schema.end()) {
                const auto both = p->is_string()
                                      ? format_rule_with_pattern(it->get<std::string>(), p->get<std::string>())
                                      : std::nullopt;
                if (!both)
                    fail(
                        fmt::format("'pattern' together with 'format' at {} is supported only for the patterns zod "
                                    "writes beside its formats; keep one of them",
                                    path_text(path)));
                rule = *both;
            }
            // Lengths are fine when every string of the format already satisfies them.
            if ((min_length && *min_length > format->min_length) || (max_length && *max_length < format->max_length))
                fail(
                    fmt::format("minLength/maxLength together with format '{}' at {} are not supported (strings of "
                                "this format have {} to {} characters); remove them or the format",
                                it->get<std::string>(), path_text(path), format->min_length, format->max_length));
            return add_rule(hint, fmt::format("{} {} {}{}", kQuote, primitive(rule), kQuote, gap()));
        }
    }
    if (schema.contains("pattern")) {
        if (min_length || max_length)
            fail(
                fmt::format("minLength/maxLength together with 'pattern' at {} are not supported; express the "
                            "length in the pattern",
                            path_text(path)));
        return visit_pattern(schema, path, hint);
    }
    if (!min_length && !max_length) return primitive("string");
    const std::string chars = gbnf::repeat(primitive("char"), min_length.value_or(0), max_length);
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint, fmt::format("{} {} {}{}", kQuote, chars, kQuote, gap()));
}

std::string SchemaCompiler::visit_integer(const Json& schema, const std::string& path, const std::string& hint) {
    const auto [lo, hi] = read_bounds(schema, path, true);
    if (!lo && !hi) return primitive("integer");
    const std::string digits =
        integer_range_gbnf(lo ? std::optional(lo->value) : std::nullopt, hi ? std::optional(hi->value) : std::nullopt);
    if (digits.empty()) fail(fmt::format("no integer satisfies the bounds at {}", path_text(path)));
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint, digits + gap());
}

std::string SchemaCompiler::visit_number(const Json& schema, const std::string& path, const std::string& hint) {
    const auto [lo, hi] = read_bounds(schema, path, false);
    if (!lo && !hi) return primitive("number");
    const std::string digits = number_range_gbnf(lo, hi);
    if (digits.empty()) fail(fmt::format("no number satisfies the bounds at {}", path_text(path)));
    if (m_options.any_whitespace) primitive("space");
    return add_rule(hint, digits + gap());
}

}  // namespace loradesk::grammar::json_schema
