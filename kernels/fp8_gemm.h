// FP8 x FP8 GEMM for fp8 checkpoints on Hopper's fp8 tensor cores, through cuBLASLt's scaled matmul (CUDA 12.9+):
// block-scaled weights (Qwen3-FP8 / DeepSeek `weight_scale_inv` per 128x128 block) with x scaled per token and 128
// columns, and per-channel weights (compressed-tensors, llm-compressor's FP8_DYNAMIC; per-tensor scales are packed
// per channel, quant_pack.cpp) with x scaled per token. The activations are quantized first, the way DeepSeek's
// reference code, vLLM, SGLang and transformers run these checkpoints (W8A8): that is what makes the fp8 tensor cores
// usable, at about one e4m3 rounding of x per element (the weight-only kernels, quant_gemv / quant_mma, keep x in
// bf16). For batches and prefill, where the weight-only kernels run out of issue slots or dequantize to bf16 first.
// Same contract as launchers.h: raw device pointers, an explicit stream, asynchronous; nothing throws, logs or syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "quant_params.h"

namespace loradesk::kernels {

// Per token t and block b of block_cols columns (128, or k for one scale per token; the last block may be partial):
// s = amax(|x[t, b]|) / 448 (1 for an all-zero block), xq[t, c] = e4m3(x[t, c] / s) rounded to nearest even and
// saturated to +-448, x_scale[b * scale_ld + t] = s, all in f32 with IEEE division (ref::fp8_quantize_rows is the
// twin, bit for bit). Rows n_tokens .. fp8_gemm_rows(n_tokens) - 1 are written as zeros with scale 1, x not read
// there. xq rows are k bytes, 16-byte aligned with k % 16 == 0; x_row_stride % 4 == 0; scale_ld >=
// fp8_gemm_rows(n_tokens); block_cols 128 or k. cudaErrorInvalidValue without launching otherwise.
cudaError_t fp8_quantize_rows(const uint16_t* x, int64_t x_row_stride, int n_tokens, int k, uint8_t* xq, float* x_scale,
                              int scale_ld, int block_cols, cudaStream_t stream);

// The shapes handed to cuBLASLt: block128 n % 128 == 0 and k % 512 == 0 (whole blocks, and scale rows of a multiple
// of 4 floats), per_channel n % 16 == 0 and k % 16 == 0 (per_tensor: refused, cuBLASLt 13.1 has no algorithm for a
// scalar weight scale beside per-token x scales on the H100); y_row_stride >= n and % 8 == 0, n_tokens >= 1 (run on
// fp8_gemm_rows(n_tokens) rows), 16-byte aligned pointers. Whether cuBLASLt has an algorithm is Fp8Gemm::takes.
bool fp8_gemm_supported(const Fp8GemmParams& p);

// y[t, c] = bf16(sum_b ws(c, b) * x_scale[b][t] * sum_{k in b} w[c, k] * xq[t, k]), f32 accumulation, for t <
// fp8_gemm_rows(n_tokens) (y needs room for the padding rows, which come out zero); ws(c, b) = w_scale[c / 128][b]
// (block128, b a block of 128 columns) or w_scale[c] (per_channel, b the whole row).
// One per stream user: owns the cuBLASLt handle and the algorithms chosen per shape (cuBLASLt's heuristic costs tens
// of microseconds; a decode graph captures the launch alone). The workspace is the caller's (stream capture must not
// allocate).
class Fp8Gemm {
  public:
    Fp8Gemm();
    ~Fp8Gemm();
    Fp8Gemm(const Fp8Gemm&) = delete;
    Fp8Gemm& operator=(const Fp8Gemm&) = delete;

    // Whether this device and library run the block-scaled fp8 GEMM at all (sm_90, cuBLASLt 12.9+): asks for an
    // algorithm at a small shape. Call before run(); again when the workspace changes (the plans are dropped).
    bool init(void* workspace, std::size_t workspace_bytes);
    bool available() const { return m_available; }
    // Whether run(p) would launch: init succeeded, the shape is supported and cuBLASLt has an algorithm for it and
    // p.w_scaling (asked once per shape and kept).
    bool takes(const Fp8GemmParams& p);
    // cudaErrorInvalidValue unless takes(p) would hold (cudaErrorNotSupported when only the algorithm is missing),
    // else the launch status.
    cudaError_t run(const Fp8GemmParams& p, cudaStream_t stream);

  private:
    struct Plan;
    const Plan* plan(const Fp8GemmParams& p);

    void* m_handle = nullptr;  // cublasLtHandle_t
    void* m_workspace = nullptr;
    std::size_t m_workspace_bytes = 0;
    bool m_available = false;
    std::map<std::tuple<Fp8Scaling, int, int, int, int64_t>, std::unique_ptr<Plan>> m_plans;
};

}  // namespace loradesk::kernels
