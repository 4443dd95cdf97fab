// FP8 x FP8 GEMM for block-scaled fp8 checkpoints (Qwen3-FP8 / DeepSeek `weight_scale_inv` per 128x128 block) on
// Hopper's fp8 tensor cores, through cuBLASLt's block scaling (CUDA 12.9+: 128x128 blocks for the weights, 1x128
// for the activations). The activations are quantized first, per token and per 128 input columns, the way
// DeepSeek's reference code, vLLM, SGLang and transformers' FineGrainedFP8 run these checkpoints (W8A8): that is
// what makes the fp8 tensor cores usable, at about one e4m3 rounding of x per element (the weight-only kernels,
// quant_gemv / quant_mma, keep x in bf16). For batches and prefill, where the weight-only kernels run out of issue
// slots or dequantize to bf16 first. Same contract as launchers.h: raw device pointers, an explicit stream,
// asynchronous; nothing throws, logs or syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "quant_params.h"

namespace loradesk::kernels {

// Per token t and block b of 128 columns (the last may be partial): s = amax(|x[t, b]|) / 448 (1 for an all-zero
// block), xq[t, c] = e4m3(x[t, c] / s) rounded to nearest even and saturated to +-448, x_scale[b * scale_ld + t] =
// s, all in f32 with IEEE division (ref::fp8_quantize_rows is the twin, bit for bit). Rows n_tokens ..
// fp8_gemm_rows(n_tokens) - 1 are written as zeros with scale 1, x not read there. xq rows are k bytes, 16-byte
// aligned with k % 16 == 0; x_row_stride % 4 == 0; scale_ld >= fp8_gemm_rows(n_tokens). cudaErrorInvalidValue
// without launching otherwise.
cudaError_t fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                              int scale_ld, cudaStream_t stream);

// The shapes cuBLASLt's block-scaled kernels take here: n % 128 == 0, k % 512 == 0 (whole blocks, and scale rows of
// a multiple of 4 floats), y_row_stride >= n and % 8 == 0, n_tokens >= 1 (run on fp8_gemm_rows(n_tokens) rows).
bool fp8_block_gemm_supported(const Fp8BlockGemmParams& p);

// y[t, c] = bf16(sum_b w_scale[c / 128][b] * x_scale[b][t] * sum_{k in b} w[c, k] * xq[t, k]), f32 accumulation,
// for t < fp8_gemm_rows(n_tokens): y needs room for the padding rows, which come out zero.
// One per stream user: owns the cuBLASLt handle and the algorithms chosen per shape (cuBLASLt's heuristic costs
// tens of microseconds; a decode graph captures the launch alone). The workspace is the caller's (stream capture
// must not allocate).
class Fp8BlockGemm {
  public:
    Fp8BlockGemm() = default;
    ~Fp8BlockGemm();
    Fp8BlockGemm(const Fp8BlockGemm&) = delete;
    Fp8BlockGemm& operator=(const Fp8BlockGemm&) = delete;

    // Whether this device and library run the block-scaled fp8 GEMM at all (sm_90, cuBLASLt 12.9+): asks for an
    // algorithm at a small shape. Call once, before run().
    bool init(void* workspace, std::size_t workspace_bytes);
    bool available() const { return m_available; }
    // cudaErrorInvalidValue for unsupported shapes or before a successful init, cudaErrorNotSupported when cuBLASLt
    // has no algorithm for the shape, else the launch status.
    cudaError_t run(const Fp8BlockGemmParams& p, cudaStream_t stream);

  private:
    struct Plan;
    const Plan* plan(int n_tokens, int n, int k, int64_t ldy, const void* scales);

    void* m_handle = nullptr;  // cublasLtHandle_t
    void* m_workspace = nullptr;
    std::size_t m_workspace_bytes = 0;
    bool m_available = false;
    std::map<std::tuple<int, int, int, int64_t>, Plan*> m_plans;
};

}  // namespace loradesk::kernels
