// Reference dequantizers per format; see dequantize.h. Tensor bytes may be unaligned inside a mapping, so
// packed words are copied out with memcpy.
#include "model/dequantize.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace loradesk::model {
namespace {

constexpr int kAwqNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // inverse of AutoAWQ's order map

std::vector<int32_t> read_i32(const TensorView& t) {
    std::vector<int32_t> v(std::size_t(t.numel()));
    std::memcpy(v.data(), t.data, v.size() * 4);
    return v;
}

void dequantize_fp8(const QuantizedLinear& l, float* out) {
    const int64_t n_out = l.out_features, n_in = l.in_features;
    const std::vector<float> s = l.scales->to_f32();
    const uint8_t* w = l.qweight->data;
    const int64_t scale_cols = l.format == QuantFormat::fp8_block ? (n_in + l.block_in - 1) / l.block_in : 0;
    for (int64_t o = 0; o < n_out; ++o) {
        for (int64_t i = 0; i < n_in; ++i) {
            float scale = s[0];
            if (l.format == QuantFormat::fp8_channel)
                scale = s[std::size_t(o)];
            else if (l.format == QuantFormat::fp8_block)
                scale = s[std::size_t((o / l.block_out) * scale_cols + i / l.block_in)];
            out[o * n_in + i] = fp8_e4m3_to_f32(w[o * n_in + i]) * scale;
        }
    }
}

// qweight [in, out/8]: row i holds W[:, i] with eight output columns per word.
void dequantize_awq(const QuantizedLinear& l, float* out) {
    const int64_t n_out = l.out_features, n_in = l.in_features, words = n_out / 8;
    const std::vector<int32_t> qw = read_i32(*l.qweight), qz = read_i32(*l.zeros);
    const std::vector<float> s = l.scales->to_f32();
    for (int64_t i = 0; i < n_in; ++i) {
        const int64_t g = i / l.group_size;
        for (int64_t o = 0; o < n_out; ++o) {
            const int q = awq_nibble(uint32_t(qw[std::size_t(i * words + o / 8)]), int(o % 8));
            const int z = awq_nibble(uint32_t(qz[std::size_t(g * words + o / 8)]), int(o % 8));
            out[o * n_in + i] = float(q - z) * s[std::size_t(g * n_out + o)];
        }
    }
}

// qweight [in/8, out]: word (i/8, o) holds W[o, i..i+7] in nibbles 0..7; qzeros [groups, out/8] packs
// output columns the same sequential way; g_idx names each input row's group.
void dequantize_gptq(const QuantizedLinear& l, float* out) {
    const int64_t n_out = l.out_features, n_in = l.in_features;
    const std::vector<int32_t> qw = read_i32(*l.qweight), qz = read_i32(*l.zeros), g_idx = read_i32(*l.g_idx);
    const std::vector<float> s = l.scales->to_f32();
    for (int64_t i = 0; i < n_in; ++i) {
        const int64_t g = g_idx[std::size_t(i)];
        for (int64_t o = 0; o < n_out; ++o) {
            const int q = int((uint32_t(qw[std::size_t((i / 8) * n_out + o)]) >> (4 * (i % 8))) & 0xfu);
            const int z =
                int((uint32_t(qz[std::size_t(g * (n_out / 8) + o / 8)]) >> (4 * (o % 8))) & 0xfu) + l.zero_offset;
            out[o * n_in + i] = float(q - z) * s[std::size_t(g * n_out + o)];
        }
    }
}

}  // namespace

float fp8_e4m3_to_f32(uint8_t v) {
    const int sign = v >> 7, exp = (v >> 3) & 0xf, mant = v & 0x7;
    float mag;
    if (exp == 0xf && mant == 0x7)
        mag = std::numeric_limits<float>::quiet_NaN();
    else if (exp == 0)
        mag = std::ldexp(float(mant), -9);  // subnormal: mant/8 * 2^-6
    else
        mag = std::ldexp(float(8 + mant), exp - 10);  // (1 + mant/8) * 2^(exp-7)
    return sign ? -mag : mag;
}

int awq_nibble(uint32_t packed, int col) { return int((packed >> (4 * kAwqNibbleOfColumn[col])) & 0xfu); }

void dequantize(const QuantizedLinear& l, float* out) {
    if (!l.qweight || !l.scales)
        throw_error(ErrorCode::internal, "dequantize: the projection has no weight or scale tensor bound");
    switch (l.format) {
        case QuantFormat::fp8_block:
        case QuantFormat::fp8_tensor:
        case QuantFormat::fp8_channel:
            return dequantize_fp8(l, out);
        case QuantFormat::awq:
            return dequantize_awq(l, out);
        case QuantFormat::gptq:
            return dequantize_gptq(l, out);
        case QuantFormat::none:
            break;
    }
    throw_error(ErrorCode::internal, "dequantize: the projection is not quantized");
}

std::vector<float> dequantize(const QuantizedLinear& l) {
    std::vector<float> out(std::size_t(l.out_features * l.in_features));
    dequantize(l, out.data());
    return out;
}

}  // namespace loradesk::model
