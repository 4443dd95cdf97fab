#include "grammar/utf8_sequences.h"

namespace loradesk::grammar {
namespace {

int encode(uint32_t cp, uint8_t* out) {
    if (cp < 0x80) {
        out[0] = uint8_t(cp);
        return 1;
    }
    if (cp < 0x800) {
        out[0] = uint8_t(0xC0 | (cp >> 6));
        out[1] = uint8_t(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = uint8_t(0xE0 | (cp >> 12));
        out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
        out[2] = uint8_t(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = uint8_t(0xF0 | (cp >> 18));
    out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
    out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[3] = uint8_t(0x80 | (cp & 0x3F));
    return 4;
}

void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
    if (lo > hi) return;
    if (lo <= 0xDFFF && hi >= 0xD800) {  // cut the surrogates out
        if (lo < 0xD800) split(lo, 0xD7FF, out);
        if (hi > 0xDFFF) split(0xE000, hi, out);
        return;
    }
    for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {  // keep each piece within one encoded length
        if (lo <= max && hi > max) {
            split(lo, max, out);
            split(max + 1, hi, out);
            return;
        }
    }
    if (hi < 0x80) {
        out.push_back({{uint8_t(lo), uint8_t(hi)}});
        return;
    }
    // Make every continuation byte position span either one value or its full 0x80-0xBF range.
    for (int i = 1; i < 4; ++i) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                split(lo, lo | m, out);
                split((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                split(lo, (hi & ~m) - 1, out);
                split(hi & ~m, hi, out);
                return;
            }
        }
    }
    uint8_t a[4], b[4];
    int n = encode(lo, a);
    encode(hi, b);
    Utf8Sequence seq;
    for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
    out.push_back(std::move(seq));
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CpRange>& ranges) {
    std::vector<Utf8Sequence> out;
    for (const auto& r : ranges) split(r.lo, std::min(r.hi, kMaxCodePoint), out);
    return out;
}

}  // namespace loradesk::grammar
