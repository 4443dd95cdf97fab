// Dequantization of AWQ / GPTQ int4 and fp8 weights to bf16 rows (quant_dequant.h). Memory-bound and simple:
// AWQ: a 32 x 8 thread block covers 32 k rows of qweight by 8 column packs (whole 32-byte sectors read, 64-byte
// runs of each output row written); GPTQ: 32 packed k words by 8 columns (512-byte runs of each row written; a
// tile transposed through shared memory for coalesced reads measured 5 % slower at Qwen3-8B batch 32); fp8: 8
// weights per thread. The product is formed in f32 exactly as the reference twin does and rounded once, so
// outputs match ref::quant_dequantize rounded to bf16 bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "launch_pdl.cuh"
#include "quant_dequant.h"

namespace loradesk::kernels {
namespace {

__device__ __forceinline__ int nibble(uint32_t w, int i) { return int((w >> (4 * i)) & 0xfu); }

__device__ __forceinline__ float fp16(const uint16_t* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }

// threadIdx.x: k (32 per block), threadIdx.y: pack of 8 columns; grid (k / 32, packs in range / 8).
__global__ void awq_dequant(QuantGemvParams p, int row_begin, int n_rows, __nv_bfloat16* out) {
    detail::pdl_wait();
    const int k = blockIdx.x * 32 + threadIdx.x;
    const int pack = row_begin / 8 + blockIdx.y * 8 + threadIdx.y;
    if (k >= p.k || pack >= (row_begin + n_rows) / 8) return;
    const int packs = p.n / 8, g = k / p.group_size;
    const uint32_t w = __ldg(reinterpret_cast<const uint32_t*>(p.qweight) + int64_t(k) * packs + pack);
    const uint32_t z = __ldg(reinterpret_cast<const uint32_t*>(p.qzeros) + int64_t(g) * packs + pack);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
        const int n = pack * 8 + c, i = (c & 1) * 4 + (c >> 1);  // nibble of column c: inverse of kAwqOrder
        const float v = float(nibble(w, i) - nibble(z, i)) * fp16(p.scales + int64_t(g) * p.n + n);
        out[int64_t(n - row_begin) * p.k + k] = __float2bfloat16_rn(v);
    }
}

// threadIdx.x: packed k word (8 k each, 32 per block), threadIdx.y: column; grid (k / 256, n_rows / 8).
__global__ void gptq_dequant(QuantGemvParams p, int row_begin, int n_rows, __nv_bfloat16* out) {
    detail::pdl_wait();
    const int kw = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 8 + threadIdx.y;
    if (kw >= p.k / 8 || r >= n_rows) return;
    const int n = row_begin + r, packs = p.n / 8;
    const uint32_t w = __ldg(reinterpret_cast<const uint32_t*>(p.qweight) + int64_t(kw) * p.n + n);
    __align__(16) __nv_bfloat16 v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int k = kw * 8 + i, g = p.g_idx ? __ldg(p.g_idx + k) : k / p.group_size;
        const uint32_t zw = __ldg(reinterpret_cast<const uint32_t*>(p.qzeros) + int64_t(g) * packs + n / 8);
        const int z = nibble(zw, n % 8) + (p.zero_plus_one ? 1 : 0);
        v[i] = __float2bfloat16_rn(float(nibble(w, i) - z) * fp16(p.scales + int64_t(g) * p.n + n));
    }
    *reinterpret_cast<uint4*>(out + int64_t(r) * p.k + kw * 8) = *reinterpret_cast<const uint4*>(v);
}

// One thread per weight; grid (n_rows, k / 256): rows on x, whose limit is 2^31 - 1.
__global__ void fp8_dequant(QuantGemvParams p, int row_begin, __nv_bfloat16* out) {
    detail::pdl_wait();
    const int k = blockIdx.y * 256 + threadIdx.x, r = blockIdx.x, n = row_begin + r;
    if (k >= p.k) return;
    float scale = p.w_scale[0];
    if (p.fp8_scaling == Fp8Scaling::per_channel)
        scale = p.w_scale[n];
    else if (p.fp8_scaling == Fp8Scaling::block128)
        scale = p.w_scale[int64_t(n / 128) * ((p.k + 127) / 128) + k / 128];
    __nv_fp8_e4m3 q;
    q.__x = p.w_fp8[int64_t(n) * p.k + k];
    out[int64_t(r) * p.k + k] = __float2bfloat16_rn(float(q) * scale);
}

// Eight weights per thread (8-byte load, 16-byte store) when k % 8 == 0: a run of 8 never crosses a 128-block.
// grid (n_rows, k / 8 / 256).
__global__ void fp8_dequant8(QuantGemvParams p, int row_begin, __nv_bfloat16* out) {
    detail::pdl_wait();
    const int k8 = blockIdx.y * 256 + threadIdx.x, r = blockIdx.x, n = row_begin + r;
    if (k8 >= p.k / 8) return;
    const int k = k8 * 8;
    float scale = p.w_scale[0];
    if (p.fp8_scaling == Fp8Scaling::per_channel)
        scale = p.w_scale[n];
    else if (p.fp8_scaling == Fp8Scaling::block128)
        scale = p.w_scale[int64_t(n / 128) * ((p.k + 127) / 128) + k / 128];
    const uint2 w = __ldcs(reinterpret_cast<const uint2*>(p.w_fp8 + int64_t(n) * p.k + k));
    const uint32_t words[2] = {w.x, w.y};
    __align__(16) __nv_bfloat16 v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        __nv_fp8_e4m3 q;
        q.__x = uint8_t(words[e / 4] >> (8 * (e % 4)));
        v[e] = __float2bfloat16_rn(float(q) * scale);
    }
    *reinterpret_cast<uint4*>(out + int64_t(r) * p.k + k) = *reinterpret_cast<const uint4*>(v);
}

}  // namespace

bool quant_dequantize_supported(const QuantGemvParams& p, int row_begin, int n_rows) {
    if (p.n <= 0 || p.k <= 0 || row_begin < 0 || n_rows <= 0 || row_begin + n_rows > p.n || p.k_order) return false;
    if (p.format == QuantFormat::fp8_e4m3) return p.w_fp8 && p.w_scale;
    if (p.format == QuantFormat::awq_int4 && p.g_idx) return false;
    return p.n % 8 == 0 && p.k % 8 == 0 && p.group_size > 0 && row_begin % 8 == 0 && n_rows % 8 == 0 && p.qweight &&
           p.qzeros && p.scales && (reinterpret_cast<uintptr_t>(p.qweight) & 3u) == 0;
}

cudaError_t quant_dequantize(const QuantGemvParams& p, int row_begin, int n_rows, uint16_t* w_out,
                             cudaStream_t stream) {
    if (!quant_dequantize_supported(p, row_begin, n_rows) || !w_out) return cudaErrorInvalidValue;
    auto* out = reinterpret_cast<__nv_bfloat16*>(w_out);
    switch (p.format) {
        case QuantFormat::awq_int4:
            return detail::launch(awq_dequant, dim3((p.k + 31) / 32, (n_rows / 8 + 7) / 8), dim3(32, 8), 0, stream, p,
                                  row_begin, n_rows, out);
        case QuantFormat::gptq_int4:
            if ((reinterpret_cast<uintptr_t>(w_out) & 15u) != 0) return cudaErrorInvalidValue;
            return detail::launch(gptq_dequant, dim3((p.k / 8 + 31) / 32, (n_rows + 7) / 8), dim3(32, 8), 0, stream, p,
                                  row_begin, n_rows, out);
        case QuantFormat::fp8_e4m3:
            if (p.k % 8 == 0 && (reinterpret_cast<uintptr_t>(p.w_fp8) & 7u) == 0 &&
                (reinterpret_cast<uintptr_t>(w_out) & 15u) == 0)
                return detail::launch(fp8_dequant8, dim3(n_rows, (p.k / 8 + 255) / 256), dim3(256), 0, stream, p,
                                      row_begin, out);
            return detail::launch(fp8_dequant, dim3(n_rows, (p.k + 255) / 256), dim3(256), 0, stream, p, row_begin,
                                  out);
    }
    return cudaErrorInvalidValue;
}

}  // namespace loradesk::kernels
