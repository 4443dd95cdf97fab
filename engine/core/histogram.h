// Histogram: fixed buckets (upper bounds), per-bucket counts, sum and count — the shape Prometheus
// exposes. A plain value type: the owner synchronises it (the engine loop writes its own under the
// lock it publishes stats with).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace loradesk {

struct Histogram {
    std::vector<double> bounds;    // ascending upper bounds; +Inf is implied
    std::vector<uint64_t> counts;  // per bucket, not cumulative; counts.size() == bounds.size() + 1
    uint64_t count = 0;
    double sum = 0;

    Histogram() = default;
    explicit Histogram(std::initializer_list<double> upper_bounds)
        : bounds(upper_bounds), counts(upper_bounds.size() + 1, 0) {}

    void observe(double value) {
        std::size_t i = 0;
        while (i < bounds.size() && value > bounds[i]) ++i;
        ++counts[i];
        ++count;
        sum += value;
    }
};

}  // namespace loradesk
