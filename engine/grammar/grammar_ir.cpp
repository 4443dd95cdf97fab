#include "grammar/grammar_ir.h"

#include <algorithm>

namespace loradesk::grammar {

std::vector<CpRange> normalize_ranges(std::vector<CpRange> ranges) {
    std::vector<CpRange> out;
    for (auto& r : ranges) r.hi = std::min(r.hi, kMaxCodePoint);
    std::erase_if(ranges, [](const CpRange& r) { return r.lo > r.hi; });
    std::sort(ranges.begin(), ranges.end(), [](const CpRange& a, const CpRange& b) { return a.lo < b.lo; });
    for (const auto& r : ranges) {
        if (!out.empty() && r.lo <= out.back().hi + 1)
            out.back().hi = std::max(out.back().hi, r.hi);
        else
            out.push_back(r);
    }
    return out;
}

std::vector<CpRange> negate_ranges(const std::vector<CpRange>& ranges) {
    std::vector<CpRange> out;
    uint32_t next = 0;
    for (const auto& r : ranges) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
    return out;
}

}  // namespace loradesk::grammar
