// Element types of checkpoint tensors and the scalar conversions between them.
// bf16 -> f32 is a shift; f32 -> bf16 rounds to nearest even (as PyTorch does); f16 is IEEE half.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace loradesk {

// f8_e4m3 is OCP FP8 E4M3 ("e4m3fn": no infinities, max 448), the storage type of FP8 checkpoints.
enum class DType { f32, f16, bf16, i32, i64, u8, i8, bool_, f64, i16, u16, u32, u64, f8_e4m3 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                 // safetensors spelling: "F32", "BF16", ...
bool parse_dtype(std::string_view name, DType* out);  // false for unknown names
bool is_float_dtype(DType t);                         // f32, f16, bf16 (the weight types we compute with)

inline float bf16_to_f32(uint16_t v) {
    uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Converts n elements of a float dtype (f32/f16/bf16) to f32. src need not be aligned.
void convert_to_f32(const void* src, DType src_type, std::size_t n, float* dst);
// Converts n f32 values to a float dtype; dst need not be aligned.
void convert_from_f32(const float* src, std::size_t n, DType dst_type, void* dst);

}  // namespace loradesk
