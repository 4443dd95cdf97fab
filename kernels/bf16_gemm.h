// bf16 GEMM through cuBLASLt for the runner's projections from 3 tokens on and lm_head over several rows, with the
// algorithm chosen by timing (tune) instead of cublasGemmEx's default. Row-major y [t, n] = x [t, k] w [n, k]^T, f32
// accumulation, bf16 or f32 out. H200, Llama-7B and Qwen3-8B projections (gemm_algo_bench, docs/kernel-benchmarks.md):
// cuBLASLt's first offer is 0.1-2 us faster per call than cublasGemmEx's default, and the fastest of its offers up to
// 10 % faster at some shapes (Qwen3-8B gate|up at 8 tokens 52.7 against 58.0 us).
// Same contract as launchers.h: raw device pointers, an explicit stream; nothing throws or logs. tune() synchronizes
// the stream (it times); run() is asynchronous and may be captured into a graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace loradesk::kernels {

struct Bf16GemmParams {
    const uint16_t* w = nullptr;  // [n, k] bf16
    const uint16_t* x = nullptr;  // [n_tokens, x_row_stride] bf16
    void* y = nullptr;            // [n_tokens, y_row_stride] bf16, or f32 with f32_out
    int64_t x_row_stride = 0, y_row_stride = 0;
    int n_tokens = 0, n = 0, k = 0;
    bool f32_out = false;
};

// 16-byte aligned pointers, strides of whole 16-byte rows (x_row_stride % 8 == 0, y_row_stride % 8 or % 4 with
// f32_out), x_row_stride >= k, y_row_stride >= n, everything positive.
bool bf16_gemm_supported(const Bf16GemmParams& p);

// One per stream user: owns the cuBLASLt handle, a plan per shape (descriptors and algorithm; the heuristic costs tens
// of microseconds, a graph captures only the launch) and the tuned choices. The workspace is the caller's.
class Bf16Gemm {
  public:
    Bf16Gemm();
    ~Bf16Gemm();
    Bf16Gemm(const Bf16Gemm&) = delete;
    Bf16Gemm& operator=(const Bf16Gemm&) = delete;

    // Creates the handle and drops the plans (and, when the workspace size changes, the tuned choices).
    bool init(void* workspace, std::size_t workspace_bytes);
    bool available() const { return m_available; }

    // Times each algorithm cuBLASLt offers for p's shape (up to kOffers) over `weights`, n_weights matrices of p's
    // shape called in turn so that they stream from DRAM as a step's layers do (p.w is not read), and keeps the one
    // pick_gemm_offer names for run() at p.n_tokens and at fewer tokens down to the next tuned count, where cuBLASLt
    // accepts it for those shapes. Writes p.y. Must not run inside a stream capture.
    cudaError_t tune(const Bf16GemmParams& p, const uint16_t* const* weights, int n_weights, cudaStream_t stream);
    // Whether tune already chose for p's shape and token count.
    bool tuned(const Bf16GemmParams& p) const;

    // cudaErrorInvalidValue unless available() and bf16_gemm_supported(p); cudaErrorNotSupported where cuBLASLt has
    // no algorithm for the shape (the caller falls back); else the launch status.
    cudaError_t run(const Bf16GemmParams& p, cudaStream_t stream);

    static constexpr int kOffers = 8;

  private:
    struct Plan;
    using Shape = std::tuple<int, int, int64_t, int64_t, bool>;  // n, k, x and y row strides, f32_out
    Plan* plan(const Bf16GemmParams& p);

    void* m_handle = nullptr;  // cublasLtHandle_t
    void* m_workspace = nullptr;
    std::size_t m_workspace_bytes = 0;
    bool m_available = false;
    std::map<std::pair<Shape, int>, std::unique_ptr<Plan>> m_plans;  // by shape and token count
    std::map<Shape, std::map<int, std::unique_ptr<Plan>>> m_tuned;   // by shape, then tuned token count
};

}  // namespace loradesk::kernels
