// Round-to-nearest quantization into the Hub's packed layouts; see quantize.h.
#include "model/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "model/dequantize.h"
#include "model/quantized_linear.h"

namespace loradesk::model {
namespace {

constexpr float kFp8Max = 448.0f;
constexpr int kAwqOrderMap[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble j holds column kAwqOrderMap[j]

// Scales are rounded to the dtype they are stored in before quantizing, so dequantizing the file reproduces
// exactly the values the quantizer used.
float stored(float v, DType t) {
    uint8_t b[4];
    convert_from_f32(&v, 1, t, b);
    float r;
    convert_to_f32(b, t, 1, &r);
    return r;
}

PackedTensor make(const QuantTensorSpec& s) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    return {s.name, s.dtype, s.shape, std::vector<uint8_t>(std::size_t(n) * dtype_size(s.dtype), 0)};
}

void put_f32s(PackedTensor& t, const std::vector<float>& v) {
    convert_from_f32(v.data(), v.size(), t.dtype, t.bytes.data());
}

void or_nibble(PackedTensor& t, int64_t word, int nibble, int value) {
    uint32_t w;
    std::memcpy(&w, t.bytes.data() + word * 4, 4);
    w |= uint32_t(value & 0xf) << (4 * nibble);
    std::memcpy(t.bytes.data() + word * 4, &w, 4);
}

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::vector<PackedTensor> quantize_fp8(const QuantConfig& q, const std::vector<QuantTensorSpec>& specs, const float* w,
                                       int64_t out, int64_t in) {
    PackedTensor weight = make(specs[0]), scale = make(specs[1]);
    // Scale cell of each element: one per block, per output row, or one for the tensor.
    const int64_t bo = q.format == QuantFormat::fp8_block     ? q.block_out
                       : q.format == QuantFormat::fp8_channel ? 1
                                                              : out;
    const int64_t bi = q.format == QuantFormat::fp8_block ? q.block_in : in;
    const int64_t rows = (out + bo - 1) / bo, cols = (in + bi - 1) / bi;
    std::vector<float> s(std::size_t(rows * cols), 0.0f);
    // Row by row, one scale cell per run of bi inputs (no division per element: 8B shapes have 7e9 of them).
    for (int64_t o = 0; o < out; ++o) {
        float* cells = s.data() + (o / bo) * cols;
        for (int64_t i0 = 0, c = 0; i0 < in; i0 += bi, ++c)
            for (int64_t i = i0; i < std::min(in, i0 + bi); ++i)
                cells[c] = std::max(cells[c], std::fabs(w[o * in + i]));
    }
    for (float& v : s) v = stored(std::max(v, 1e-12f) / kFp8Max, scale.dtype);
    for (int64_t o = 0; o < out; ++o) {
        const float* cells = s.data() + (o / bo) * cols;
        for (int64_t i0 = 0, c = 0; i0 < in; i0 += bi, ++c)
            for (int64_t i = i0; i < std::min(in, i0 + bi); ++i)
                weight.bytes[std::size_t(o * in + i)] = f32_to_fp8_e4m3(w[o * in + i] / cells[c]);
    }
    put_f32s(scale, s);
    std::vector<PackedTensor> r;
    r.push_back(std::move(weight));
    r.push_back(std::move(scale));
    return r;
}

// AutoAWQ's asymmetric RTN: per (group, output column) scale = (max - min) / 15, zero = -round(min / scale).
std::vector<PackedTensor> quantize_awq(const QuantConfig& q, const std::vector<QuantTensorSpec>& specs, const float* w,
                                       int64_t out, int64_t in) {
    PackedTensor qweight = make(specs[0]), qzeros = make(specs[1]), scales = make(specs[2]);
    const int64_t g = q.group_size, groups = in / g, words = out / 8;
    std::vector<float> s(std::size_t(groups * out));
    for (int64_t gi = 0; gi < groups; ++gi)
        for (int64_t o = 0; o < out; ++o) {
            float lo = w[o * in + gi * g], hi = lo;
            for (int64_t i = gi * g; i < (gi + 1) * g; ++i)
                lo = std::min(lo, w[o * in + i]), hi = std::max(hi, w[o * in + i]);
            const float scale = stored(std::max(hi - lo, 1e-5f) / 15.0f, scales.dtype);
            const int zero = std::clamp(int(-std::nearbyint(lo / scale)), 0, 15);
            s[std::size_t(gi * out + o)] = scale;
            or_nibble(qzeros, gi * words + o / 8, int(std::find(kAwqOrderMap, kAwqOrderMap + 8, o % 8) - kAwqOrderMap),
                      zero);
            for (int64_t i = gi * g; i < (gi + 1) * g; ++i) {
                const int v = std::clamp(int(std::nearbyint(w[o * in + i] / scale)) + zero, 0, 15);
                or_nibble(qweight, i * words + o / 8,
                          int(std::find(kAwqOrderMap, kAwqOrderMap + 8, o % 8) - kAwqOrderMap), v);
            }
        }
    put_f32s(scales, s);
    std::vector<PackedTensor> r;
    r.push_back(std::move(qweight));
    r.push_back(std::move(qzeros));
    r.push_back(std::move(scales));
    return r;
}

// GPTQ's symmetric quantizer: scale = 2 * max|w| / 15 over the group, zero = 8; act-order assigns groups in
// permutation order (g_idx[perm[k]] = k / group_size) while rows stay in their original order.
std::vector<PackedTensor> quantize_gptq(const QuantConfig& q, const std::vector<QuantTensorSpec>& specs, const float* w,
                                        int64_t out, int64_t in, uint64_t seed) {
    if (!q.sym) throw_expected(ErrorCode::unsupported, "the GPTQ writer is symmetric only (sym: true)");
    PackedTensor qweight = make(specs[0]), qzeros = make(specs[1]), scales = make(specs[2]), g_idx = make(specs[3]);
    const int64_t g = q.group_size == -1 ? in : q.group_size, groups = (in + g - 1) / g;
    std::vector<int64_t> perm(static_cast<std::size_t>(in));
    std::iota(perm.begin(), perm.end(), 0);
    if (q.desc_act)
        for (int64_t k = in - 1; k > 0; --k)
            std::swap(perm[std::size_t(k)], perm[splitmix64(seed + uint64_t(k)) % uint64_t(k + 1)]);
    std::vector<int32_t> group_of(static_cast<std::size_t>(in));
    for (int64_t k = 0; k < in; ++k) group_of[std::size_t(perm[std::size_t(k)])] = int32_t(k / g);
    std::memcpy(g_idx.bytes.data(), group_of.data(), group_of.size() * 4);
    const int zero = 8, stored_zero = zero - (q.gptq_version == 1 ? 1 : 0);
    std::vector<float> amax(std::size_t(groups * out), 0.0f);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
            float& m = amax[std::size_t(group_of[std::size_t(i)] * out + o)];
            m = std::max(m, std::fabs(w[o * in + i]));
        }
    std::vector<float> s(amax.size());
    for (std::size_t k = 0; k < s.size(); ++k)
        s[k] = stored(amax[k] > 0 ? 2.0f * amax[k] / 15.0f : 2.0f / 15.0f, scales.dtype);
    for (int64_t gi = 0; gi < groups; ++gi)
        for (int64_t o = 0; o < out; ++o) or_nibble(qzeros, gi * (out / 8) + o / 8, int(o % 8), stored_zero);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
            const float scale = s[std::size_t(group_of[std::size_t(i)] * out + o)];
            const int v = std::clamp(int(std::nearbyint(w[o * in + i] / scale)) + zero, 0, 15);
            or_nibble(qweight, (i / 8) * out + o, int(i % 8), v);
        }
    put_f32s(scales, s);
    std::vector<PackedTensor> r;
    r.push_back(std::move(qweight));
    r.push_back(std::move(qzeros));
    r.push_back(std::move(scales));
    r.push_back(std::move(g_idx));
    return r;
}

}  // namespace

uint8_t f32_to_fp8_e4m3(float v) {
    if (std::isnan(v)) return 0x7f;
    const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
    const float a = std::min(std::fabs(v), kFp8Max);
    // Codes 0..126 are the finite magnitudes in increasing order (exponent field, then 3 mantissa bits); the
    // nearest one, ties to the even code, straight from the f32 bits (an 8B synth-model --quant fp8 writes 7e9
    // of them).
    if (a < 0.015625f)  // below 2^-6: subnormal steps of 2^-9, codes 0..8 (8 is the smallest normal)
        return uint8_t(sign | int(std::nearbyint(a * 512.0f)));
    uint32_t bits;
    std::memcpy(&bits, &a, 4);
    const int exp = int(bits >> 23) - 127;
    const uint32_t mant = bits & 0x7fffffu, rest = mant & 0xfffffu;
    uint32_t code = uint32_t((exp + 7) << 3) + (mant >> 20);
    if (rest > 0x80000u || (rest == 0x80000u && (code & 1u))) ++code;  // a carry moves into the exponent, as it should
    return uint8_t(sign | code);
}

std::vector<PackedTensor> quantize_linear(const QuantConfig& q, const std::string& prefix, const float* w, int64_t out,
                                          int64_t in, uint64_t seed) {
    const std::vector<QuantTensorSpec> specs = quantized_tensor_specs(q, prefix, out, in);
    switch (q.format) {
        case QuantFormat::fp8_block:
        case QuantFormat::fp8_tensor:
        case QuantFormat::fp8_channel:
            return quantize_fp8(q, specs, w, out, in);
        case QuantFormat::awq:
            return quantize_awq(q, specs, w, out, in);
        case QuantFormat::gptq:
            return quantize_gptq(q, specs, w, out, in, seed);
        case QuantFormat::none:
            break;
    }
    throw_error(ErrorCode::internal, "quantize_linear: format none");
}

}  // namespace loradesk::model
