// Exact digit grammars for bounded JSON integers and for numbers with integer bounds (the range-to-regex
// construction, written as GBNF expressions). Owns no JSON Schema parsing: callers pass resolved bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace loradesk::grammar::json_schema {

// Length caps that keep a model from writing digits forever; every JSON number the grammars accept has at most this
// many digits in its integer part and in its fraction (values beyond are rejected even without bounds).
inline constexpr int kMaxIntegerDigits = 19;
inline constexpr int kMaxFractionDigits = 19;
inline constexpr int kMaxExponentDigits = 2;  // keeps unbounded numbers finite in a double
// Bounds must lie within +-kMaxBound so that every magnitude fits comfortably in uint64.
inline constexpr std::int64_t kMaxBound = 1'000'000'000'000'000'000;

// Spellings of the naturals in [lo, hi] without leading zeros (hi nullopt: up to kMaxIntegerDigits digits).
// Returns "" when the range is empty.
std::string natural_range_gbnf(std::uint64_t lo, std::optional<std::uint64_t> hi);

// JSON spellings of the integers in [lo, hi] (nullopt: open on that side). "-0" (equal to 0) is included when both
// negative numbers and 0 are in range. Returns "" when the range is empty.
std::string integer_range_gbnf(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi);

struct NumberBound {
    std::int64_t value = 0;
    bool exclusive = false;
};

// JSON spellings (sign, integer part, optional fraction, no exponent) of the numbers inside the bounds. Exact:
// x <= 5 admits 5.000 but not 5.01. Returns "" when no number satisfies the bounds.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace loradesk::grammar::json_schema
