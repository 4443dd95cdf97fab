// Range-to-digits: split [lo, hi] by digit count, then per common prefix into "first digit fixed / free / fixed"
// pieces, so that the grammar is O(digits^2) in size and never enumerates values.
#include "grammar/integer_range_regex.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

namespace loradesk::grammar::json_schema {
namespace {

constexpr std::uint64_t kMaxDigitsValue = 9'999'999'999'999'999'999ULL;  // kMaxIntegerDigits nines

std::string digit_class(char lo, char hi) {
    if (lo == hi) return fmt::format("\"{}\"", lo);
    if (lo == '0' && hi == '9') return "[0-9]";
    return fmt::format("[{}-{}]", lo, hi);
}

std::string free_digits(std::size_t n) {
    if (n == 0) return "";
    return n == 1 ? " [0-9]" : fmt::format(" [0-9]{{{}}}", n);
}

std::string join_alternatives(const std::vector<std::string>& alts) {
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
}

// a and b have the same length and a <= b.
std::string same_length(std::string_view a, std::string_view b) {
    if (a.empty()) return "";
    if (a == b) return fmt::format("\"{}\"", a);
    if (a.size() == 1) return digit_class(a[0], b[0]);
    if (a[0] == b[0]) return fmt::format("\"{}\" {}", a[0], same_length(a.substr(1), b.substr(1)));
    const std::size_t n = a.size() - 1;
    const std::string zeros(n, '0'), nines(n, '9');
    std::vector<std::string> alts;
    char first = a[0], last = b[0];
    if (a.substr(1) != zeros) {
        alts.push_back(fmt::format("\"{}\" {}", a[0], same_length(a.substr(1), nines)));
        ++first;
    }
    std::string tail;
    if (b.substr(1) != nines) {
        tail = fmt::format("\"{}\" {}", b[0], same_length(zeros, b.substr(1)));
        --last;
    }
    if (first <= last) alts.push_back(digit_class(first, last) + free_digits(n));
    if (!tail.empty()) alts.push_back(tail);
    return join_alternatives(alts);
}

std::uint64_t pow10(std::size_t n) {
    std::uint64_t p = 1;
    for (std::size_t i = 0; i < n; ++i) p *= 10;
    return p;
}

std::uint64_t magnitude(std::int64_t v) { return v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : v; }

}  // namespace

std::string natural_range_gbnf(std::uint64_t lo, std::optional<std::uint64_t> hi_opt) {
    const std::uint64_t hi = hi_opt && *hi_opt < kMaxDigitsValue ? *hi_opt : kMaxDigitsValue;
    if (lo > hi) return "";
    std::vector<std::string> alts;
    const std::size_t lo_digits = std::to_string(lo).size(), hi_digits = std::to_string(hi).size();
    for (std::size_t n = lo_digits; n <= hi_digits; ++n) {
        const std::uint64_t a = std::max(lo, n == 1 ? 0 : pow10(n - 1));
        const std::uint64_t b = std::min(hi, pow10(n) - 1);  // 10^19 still fits in uint64
        // Whole digit counts collapse to one term, which keeps unbounded sides small.
        if (n > 1 && a == pow10(n - 1) && b == pow10(n) - 1) {
            alts.push_back("[1-9]" + free_digits(n - 1));
        } else {
            alts.push_back(same_length(std::to_string(a), std::to_string(b)));
        }
    }
    return join_alternatives(alts);
}

std::string integer_range_gbnf(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi) {
    std::vector<std::string> alts;
    if (!hi || *hi >= 0) {
        std::string r =
            natural_range_gbnf(lo && *lo > 0 ? *lo : 0, hi ? std::optional<std::uint64_t>(*hi) : std::nullopt);
        if (!r.empty()) alts.push_back(std::move(r));
    }
    if (!lo || *lo < 0) {
        // Magnitudes of the negative part; a lower magnitude of 0 adds "-0", which equals 0 and is then in range.
        const std::uint64_t mag_lo = hi && *hi < 0 ? magnitude(*hi) : 0;
        std::string r = natural_range_gbnf(mag_lo, lo ? std::optional<std::uint64_t>(magnitude(*lo)) : std::nullopt);
        if (!r.empty()) alts.push_back("\"-\" " + r);
    }
    if (alts.empty()) return "";
    return join_alternatives(alts);
}

namespace {

std::string any_fraction() { return fmt::format("(\".\" [0-9]{{1,{}}})?", kMaxFractionDigits); }
std::string zero_fraction() { return fmt::format("(\".\" \"0\"{{1,{}}})?", kMaxFractionDigits); }
// Leading zeros, then the first non-zero digit: one way to read each spelling.
std::string nonzero_fraction() {
    return fmt::format("\".\" \"0\"{{0,{}}} [1-9] [0-9]{{0,{}}}", kMaxFractionDigits - 1, kMaxFractionDigits - 1);
}

// Non-negative magnitudes y with A <(=) y <(=) B, decomposed on the integer part I: I strictly inside takes any
// fraction, I == A (exclusive) needs a non-zero fraction, I == B (inclusive) needs a zero fraction.
std::string magnitude_gbnf(std::uint64_t a, bool a_excl, std::optional<std::uint64_t> b, bool b_excl) {
    std::vector<std::string> alts;
    const std::uint64_t lo_any = a_excl ? a + 1 : a;
    if (!b || *b > lo_any) {
        std::string r = natural_range_gbnf(lo_any, b ? std::optional<std::uint64_t>(*b - 1) : std::nullopt);
        if (!r.empty()) alts.push_back(r + " " + any_fraction());
    }
    if (a_excl && (!b || *b > a)) alts.push_back(fmt::format("\"{}\" {}", a, nonzero_fraction()));
    if (b && !b_excl && (*b > a || (*b == a && !a_excl))) alts.push_back(fmt::format("\"{}\" {}", *b, zero_fraction()));
    if (alts.empty()) return "";
    return join_alternatives(alts);
}

}  // namespace

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
    std::vector<std::string> alts;
    if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
        const bool lo_nonneg = lo && lo->value >= 0;
        std::string r =
            magnitude_gbnf(lo_nonneg ? lo->value : 0, lo_nonneg && lo->exclusive,
                           hi ? std::optional<std::uint64_t>(hi->value) : std::nullopt, hi && hi->exclusive);
        if (!r.empty()) alts.push_back(std::move(r));
    }
    if (!lo || lo->value < 0) {
        const bool hi_nonpos = hi && hi->value <= 0;
        std::string r =
            magnitude_gbnf(hi_nonpos ? magnitude(hi->value) : 0, hi_nonpos && hi->exclusive,
                           lo ? std::optional<std::uint64_t>(magnitude(lo->value)) : std::nullopt, lo && lo->exclusive);
        if (!r.empty()) alts.push_back("\"-\" " + r);
    }
    if (alts.empty()) return "";
    return join_alternatives(alts);
}

}  // namespace loradesk::grammar::json_schema
