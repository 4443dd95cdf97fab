// Activation quantization for the block-scaled fp8 GEMM (fp8_block_gemm.h): one warp per (token, 128 columns),
// each lane 4 columns; the block's amax by warp shuffles, then every value divided by the block's scale and rounded
// to e4m3 by the hardware conversion (round to nearest even, saturating to the largest finite).
#include <cuda_fp8.h>

#include "fp8_block_gemm.h"
#include "launch_pdl.cuh"

namespace loradesk::kernels {

namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float bf16_bits_to_f32(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    fp8_quantize_rows_kernel(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                             int scale_ld) {
    const int lane = threadIdx.x & 31;
    const int block = blockIdx.x * kWarpsPerBlock + int(threadIdx.x >> 5);
    const int t = blockIdx.y;
    detail::pdl_wait();
    if (block * 128 >= k) return;
    const int c0 = block * 128 + lane * 4;
    const uint16_t* row = x + int64_t(t) * x_row_stride;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // a padding row (t >= n_tokens) quantizes as zeros, scale 1
    if (t < n_tokens && c0 + 4 <= k) {
        const uint2 raw = *reinterpret_cast<const uint2*>(row + c0);  // x_row_stride % 4 == 0: 8-byte aligned
        v[0] = bf16_bits_to_f32(raw.x & 0xffffu), v[1] = bf16_bits_to_f32(raw.x >> 16);
        v[2] = bf16_bits_to_f32(raw.y & 0xffffu), v[3] = bf16_bits_to_f32(raw.y >> 16);
    } else if (t < n_tokens) {
        for (int i = 0; i < 4; ++i) v[i] = c0 + i < k ? bf16_bits_to_f32(row[c0 + i]) : 0.0f;
    }
    float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float s = amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f;
    uint32_t packed = 0;
    for (int i = 0; i < 4; ++i) {
        const __nv_fp8_storage_t q = __nv_cvt_float_to_fp8(__fdiv_rn(v[i], s), __NV_SATFINITE, __NV_E4M3);
        packed |= uint32_t(q) << (8 * i);
    }
    uint8_t* out = xq + int64_t(t) * k;
    if (c0 + 4 <= k)
        *reinterpret_cast<uint32_t*>(out + c0) = packed;  // k % 16 == 0 keeps rows 4-byte aligned
    else
        for (int i = 0; c0 + i < k && i < 4; ++i) out[c0 + i] = uint8_t(packed >> (8 * i));
    if (lane == 0) x_scale[int64_t(block) * scale_ld + t] = s;
}

}  // namespace

cudaError_t fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                              int scale_ld, cudaStream_t stream) {
    if (n_tokens == 0) return cudaSuccess;
    if (n_tokens < 0 || k <= 0 || k % 16 || x_row_stride < k || x_row_stride % 4 || !x || !xq || !x_scale ||
        reinterpret_cast<uintptr_t>(x) % 8 || reinterpret_cast<uintptr_t>(xq) % 16 ||
        scale_ld < fp8_gemm_rows(n_tokens))
        return cudaErrorInvalidValue;
    const int blocks = (k + 127) / 128;
    const dim3 grid(unsigned((blocks + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(fp8_gemm_rows(n_tokens)));
    return detail::launch(fp8_quantize_rows_kernel, grid, kWarpsPerBlock * 32, 0, stream, x, x_row_stride, n_tokens, k,
                          xq, x_scale, scale_ld);
}

}  // namespace loradesk::kernels
