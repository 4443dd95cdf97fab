// Activation quantization for the fp8 GEMM (fp8_gemm.h), to e4m3 by the hardware conversion (round to nearest even,
// saturating to the largest finite) after an IEEE division by the block's scale.
// - 128-column blocks: one warp per (token, block), each lane 4 columns, the amax by warp shuffles.
// - one scale per token: one block per token, the row's amax through shared memory, then a second pass.
#include <cuda_fp8.h>

#include "fp8_gemm.h"
#include "launch_pdl.cuh"

namespace loradesk::kernels {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kRowThreads = 256;

__device__ __forceinline__ float bf16_bits_to_f32(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Four columns c0.. of a row (zeros past k); x_row_stride % 4 == 0 keeps full groups 8-byte aligned.
__device__ __forceinline__ void load4(const uint16_t* row, int c0, int k, float v[4]) {
    if (c0 + 4 <= k) {
        const uint2 raw = *reinterpret_cast<const uint2*>(row + c0);
        v[0] = bf16_bits_to_f32(raw.x & 0xffffu), v[1] = bf16_bits_to_f32(raw.x >> 16);
        v[2] = bf16_bits_to_f32(raw.y & 0xffffu), v[3] = bf16_bits_to_f32(raw.y >> 16);
    } else {
        for (int i = 0; i < 4; ++i) v[i] = c0 + i < k ? bf16_bits_to_f32(row[c0 + i]) : 0.0f;
    }
}

__device__ __forceinline__ void store4(uint8_t* out, int c0, int k, const float v[4], float s) {
    uint32_t packed = 0;
    for (int i = 0; i < 4; ++i) {
        const __nv_fp8_storage_t q = __nv_cvt_float_to_fp8(__fdiv_rn(v[i], s), __NV_SATFINITE, __NV_E4M3);
        packed |= uint32_t(q) << (8 * i);
    }
    if (c0 + 4 <= k)
        *reinterpret_cast<uint32_t*>(out + c0) = packed;  // k % 16 == 0 keeps rows 4-byte aligned
    else
        for (int i = 0; c0 + i < k && i < 4; ++i) out[c0 + i] = uint8_t(packed >> (8 * i));
}

__device__ __forceinline__ float scale_of(float amax) { return amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f; }

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    quantize_blocks_kernel(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                           int scale_ld) {
    const int lane = threadIdx.x & 31;
    const int block = blockIdx.x * kWarpsPerBlock + int(threadIdx.x >> 5);
    const int t = blockIdx.y;
    detail::pdl_wait();
    if (block * 128 >= k) return;
    const int c0 = block * 128 + lane * 4;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // a padding row (t >= n_tokens) quantizes as zeros, scale 1
    if (t < n_tokens) load4(x + int64_t(t) * x_row_stride, c0, k, v);
    const float s = scale_of(warp_max(fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])))));
    store4(xq + int64_t(t) * k, c0, k, v, s);
    if (lane == 0) x_scale[int64_t(block) * scale_ld + t] = s;
}

__global__ void __launch_bounds__(kRowThreads)
    quantize_rows_kernel(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale) {
    __shared__ float warp_amax[kRowThreads / 32];
    const int t = blockIdx.x;
    const uint16_t* row = x + int64_t(t) * x_row_stride;
    detail::pdl_wait();
    float amax = 0.0f;
    if (t < n_tokens)
        for (int c0 = threadIdx.x * 4; c0 < k; c0 += kRowThreads * 4) {
            float v[4];
            load4(row, c0, k, v);
            amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3]))));
        }
    amax = warp_max(amax);
    if ((threadIdx.x & 31) == 0) warp_amax[threadIdx.x >> 5] = amax;
    __syncthreads();
    amax = 0.0f;
    for (int w = 0; w < kRowThreads / 32; ++w) amax = fmaxf(amax, warp_amax[w]);
    const float s = scale_of(amax);
    for (int c0 = threadIdx.x * 4; c0 < k; c0 += kRowThreads * 4) {
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (t < n_tokens) load4(row, c0, k, v);
        store4(xq + int64_t(t) * k, c0, k, v, s);
    }
    if (threadIdx.x == 0) x_scale[t] = s;
}

}  // namespace

cudaError_t fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                              int scale_ld, int block_cols, cudaStream_t stream) {
    if (n_tokens == 0) return cudaSuccess;
    if (n_tokens < 0 || k <= 0 || k % 16 || x_row_stride < k || x_row_stride % 4 || !x || !xq || !x_scale ||
        reinterpret_cast<uintptr_t>(x) % 8 || reinterpret_cast<uintptr_t>(xq) % 16 ||
        scale_ld < fp8_gemm_rows(n_tokens) || (block_cols != 128 && block_cols != k))
        return cudaErrorInvalidValue;
    const unsigned rows = unsigned(fp8_gemm_rows(n_tokens));
    if (block_cols == 128) {
        const int blocks = (k + 127) / 128;
        const dim3 grid(unsigned((blocks + kWarpsPerBlock - 1) / kWarpsPerBlock), rows);
        return detail::launch(quantize_blocks_kernel, grid, kWarpsPerBlock * 32, 0, stream, x, x_row_stride, n_tokens,
                              k, xq, x_scale, scale_ld);
    }
    return detail::launch(quantize_rows_kernel, dim3(rows), kRowThreads, 0, stream, x, x_row_stride, n_tokens, k, xq,
                          x_scale);
}

}  // namespace loradesk::kernels
