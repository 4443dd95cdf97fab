// Log-spaced latency histogram: bucketing, quantile estimation, blob encoding.
#include "catalog/latency_histogram.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace loradesk::catalog {

int LatencyHistogram::bucket_of(double ms) {
    if (!(ms >= 1.0)) return 0;  // also catches NaN and negatives
    // Smallest i with ms < 2^(i/2), i.e. i = floor(2 log2 ms) + 1.
    double i = std::floor(2.0 * std::log2(ms)) + 1.0;
    return i >= kBuckets - 1 ? kBuckets - 1 : int(i);
}

double LatencyHistogram::upper_bound_ms(int bucket) {
    if (bucket >= kBuckets - 1) return std::numeric_limits<double>::infinity();
    return std::exp2(bucket / 2.0);
}

double LatencyHistogram::lower_bound_ms(int bucket) { return bucket <= 0 ? 0.0 : std::exp2((bucket - 1) / 2.0); }

void LatencyHistogram::merge(const LatencyHistogram& other) {
    for (int i = 0; i < kBuckets; ++i) m_counts[i] += other.m_counts[i];
}

uint64_t LatencyHistogram::total() const {
    uint64_t t = 0;
    for (auto c : m_counts) t += c;
    return t;
}

double LatencyHistogram::quantile(double q) const {
    uint64_t n = total();
    if (n == 0) return 0.0;
    double target = q * double(n);
    double cum = 0;
    for (int i = 0; i < kBuckets; ++i) {
        if (m_counts[i] == 0) continue;
        double next = cum + double(m_counts[i]);
        if (next >= target) {
            double lo = lower_bound_ms(i);
            if (i == kBuckets - 1) return lo;
            double hi = upper_bound_ms(i);
            double frac = (target - cum) / double(m_counts[i]);
            // The first bucket starts at 0: interpolate linearly there, geometrically elsewhere.
            return i == 0 ? hi * frac : lo * std::pow(hi / lo, frac);
        }
        cum = next;
    }
    return lower_bound_ms(kBuckets - 1);
}

std::vector<uint8_t> LatencyHistogram::encode() const {
    std::vector<uint8_t> out(kBuckets * 8);
    for (int i = 0; i < kBuckets; ++i)
        for (int b = 0; b < 8; ++b) out[i * 8 + b] = uint8_t(m_counts[i] >> (8 * b));
    return out;
}

LatencyHistogram LatencyHistogram::decode(const uint8_t* data, std::size_t n) {
    LatencyHistogram h;
    if (n == 0) return h;
    if (n != std::size_t(kBuckets) * 8)
        throw_expected(ErrorCode::corrupt_file,
                       fmt::format("latency histogram blob has {} bytes, expected {} (the catalog database is damaged)",
                                   n, kBuckets * 8));
    for (int i = 0; i < kBuckets; ++i) {
        uint64_t v = 0;
        for (int b = 0; b < 8; ++b) v |= uint64_t(data[i * 8 + b]) << (8 * b);
        h.m_counts[i] = v;
    }
    return h;
}

}  // namespace loradesk::catalog
