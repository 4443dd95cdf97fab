// Fixed log-spaced latency histogram (milliseconds): bucket i < kBuckets-1 holds values below
// 2^(i/2) ms, the last bucket everything from ~524 s up. Fixed bounds make per-minute histograms
// mergeable by adding counts, so p50/p95 over any time range can be estimated from stored minutes.
// A value type; not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace loradesk::catalog {

class LatencyHistogram {
  public:
    static constexpr int kBuckets = 40;

    static int bucket_of(double ms);
    static double upper_bound_ms(int bucket);  // +inf for the last bucket
    static double lower_bound_ms(int bucket);  // 0 for the first

    void add(double ms, uint64_t n = 1) { m_counts[bucket_of(ms)] += n; }
    void merge(const LatencyHistogram& other);
    uint64_t total() const;
    uint64_t count(int bucket) const { return m_counts[bucket]; }
    bool empty() const { return total() == 0; }

    // Estimated q-quantile (0 < q <= 1), interpolated geometrically inside the bucket; 0 when empty.
    double quantile(double q) const;

    // Little-endian uint64 per bucket. decode() accepts an empty blob (no samples) and throws
    // Error(corrupt_file) on a blob of the wrong size.
    std::vector<uint8_t> encode() const;
    static LatencyHistogram decode(const uint8_t* data, std::size_t n);

  private:
    std::array<uint64_t, kBuckets> m_counts{};
};

}  // namespace loradesk::catalog
