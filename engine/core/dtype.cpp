#include "core/dtype.h"

#include <cmath>

#include "core/error.h"

namespace loradesk {
namespace {

struct DTypeInfo {
    DType type;
    std::string_view name;
    std::size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "F32", 4}, {DType::f16, "F16", 2},         {DType::bf16, "BF16", 2}, {DType::i32, "I32", 4},
    {DType::i64, "I64", 8}, {DType::u8, "U8", 1},           {DType::i8, "I8", 1},     {DType::bool_, "BOOL", 1},
    {DType::f64, "F64", 8}, {DType::i16, "I16", 2},         {DType::u16, "U16", 2},   {DType::u32, "U32", 4},
    {DType::u64, "U64", 8}, {DType::f8_e4m3, "F8_E4M3", 1},
};

}  // namespace

std::size_t dtype_size(DType t) {
    for (auto& d : kDTypes)
        if (d.type == t) return d.size;
    return 0;
}

std::string_view dtype_name(DType t) {
    for (auto& d : kDTypes)
        if (d.type == t) return d.name;
    return "?";
}

bool parse_dtype(std::string_view name, DType* out) {
    for (auto& d : kDTypes) {
        if (d.name == name) {
            *out = d.type;
            return true;
        }
    }
    return false;
}

bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint32_t sign = (bits >> 16) & 0x8000u;
    int32_t exp = int32_t((bits >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return uint16_t(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return uint16_t(sign);
        mant |= 0x800000u;
        uint32_t shift = uint32_t(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = sign | uint32_t(exp) << 10 | mant >> 13;
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
    return uint16_t(half);
}

void convert_to_f32(const void* src, DType src_type, std::size_t n, float* dst) {
    const auto* bytes = static_cast<const unsigned char*>(src);
    switch (src_type) {
        // memcpy's pointers must be valid even for 0 bytes; an empty tensor's vector has data() == nullptr.
        case DType::f32:
            if (n > 0) std::memcpy(dst, src, n * 4);
            return;
        case DType::bf16:
            for (std::size_t i = 0; i < n; ++i) {
                uint16_t v;
                std::memcpy(&v, bytes + 2 * i, 2);
                dst[i] = bf16_to_f32(v);
            }
            return;
        case DType::f16:
            for (std::size_t i = 0; i < n; ++i) {
                uint16_t v;
                std::memcpy(&v, bytes + 2 * i, 2);
                dst[i] = f16_to_f32(v);
            }
            return;
        default:
            throw_error(ErrorCode::unsupported, "cannot convert " + std::string(dtype_name(src_type)) + " to F32");
    }
}

void convert_from_f32(const float* src, std::size_t n, DType dst_type, void* dst) {
    auto* bytes = static_cast<unsigned char*>(dst);
    switch (dst_type) {
        case DType::f32:
            if (n > 0) std::memcpy(dst, src, n * 4);
            return;
        case DType::bf16:
            for (std::size_t i = 0; i < n; ++i) {
                uint16_t v = f32_to_bf16(src[i]);
                std::memcpy(bytes + 2 * i, &v, 2);
            }
            return;
        case DType::f16:
            for (std::size_t i = 0; i < n; ++i) {
                uint16_t v = f32_to_f16(src[i]);
                std::memcpy(bytes + 2 * i, &v, 2);
            }
            return;
        default:
            throw_error(ErrorCode::unsupported, "cannot convert F32 to " + std::string(dtype_name(dst_type)));
    }
}

}  // namespace loradesk
