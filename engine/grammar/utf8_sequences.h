// Code-point ranges -> UTF-8 byte-range sequences (Russ Cox's utf8 range splitting, as in RE2 and Rust's
// regex-syntax): each sequence is 1-4 byte ranges whose cross product is exactly a sub-range of the input.
// Surrogates (U+D800-U+DFFF) are left out: they have no UTF-8 form.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar_ir.h"

namespace loradesk::grammar {

struct ByteRange {
    uint8_t lo = 0;
    uint8_t hi = 0;
};
using Utf8Sequence = std::vector<ByteRange>;

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CpRange>& ranges);

}  // namespace loradesk::grammar
