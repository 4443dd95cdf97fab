// What the cuBLASLt GEMMs (fp8_gemm.cpp, bf16_gemm.cpp) share: a shape's descriptors and chosen algorithm, and the
// heuristic's offers for it, the bf16 shape and the launch. Private to kernels/ (and gemm_algo_bench); includes
// cublasLt.h, so only .cpp files include it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace loradesk::kernels::detail {

struct LtPlan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;

    LtPlan() = default;
    LtPlan(const LtPlan&) = delete;
    LtPlan& operator=(const LtPlan&) = delete;
    ~LtPlan() {
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (desc) cublasLtMatmulDescDestroy(desc);
    }
};

template <class T>
bool set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
    return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// pl's descriptors for the bf16 GEMM y [t, n] = x [t, k] w [n, k]^T (row-major; f32 accumulation, bf16 or f32 y):
// the column-major D [n, t] = op_T(A) B, A = w viewed [k, n] (lda k), B = x viewed [k, t] (ldb x_ld), D ld y_ld.
// False when cuBLASLt refuses one. Bf16Gemm's shapes, and gemm_algo_bench's.
inline bool lt_describe_bf16(LtPlan& pl, int n, int k, int n_tokens, int64_t x_ld, int64_t y_ld, bool f32_out) {
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    return cublasLtMatmulDescCreate(&pl.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
           set_attr(pl.desc, CUBLASLT_MATMUL_DESC_TRANSA, op_t) &&
           set_attr(pl.desc, CUBLASLT_MATMUL_DESC_TRANSB, op_n) &&
           cublasLtMatrixLayoutCreate(&pl.a, CUDA_R_16BF, uint64_t(k), uint64_t(n), k) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatrixLayoutCreate(&pl.b, CUDA_R_16BF, uint64_t(k), uint64_t(n_tokens), x_ld) ==
               CUBLAS_STATUS_SUCCESS &&
           cublasLtMatrixLayoutCreate(&pl.d, f32_out ? CUDA_R_32F : CUDA_R_16BF, uint64_t(n), uint64_t(n_tokens),
                                      y_ld) == CUBLAS_STATUS_SUCCESS;
}

// cuBLASLt's heuristic offers for pl's shape (C and D both pl.d) within the workspace, up to max of them, best
// first: how many (0 when it has none).
inline int lt_offers(cublasLtHandle_t handle, const LtPlan& pl, std::size_t workspace_bytes,
                     cublasLtMatmulHeuristicResult_t* out, int max) {
    cublasLtMatmulPreference_t pref = nullptr;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return 0;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                         sizeof(workspace_bytes));
    int found = 0;
    const cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(handle, pl.desc, pl.a, pl.b, pl.d, pl.d, pref, max, out, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    return s == CUBLAS_STATUS_SUCCESS ? found : 0;
}

// D = A B on pl's shape with algo (alpha 1, beta 0, D as C): the launch status, cudaErrorNotSupported where cuBLASLt
// refuses the algorithm for it.
inline cudaError_t lt_matmul(cublasLtHandle_t handle, const LtPlan& pl, const cublasLtMatmulAlgo_t& algo, const void* a,
                             const void* b, void* d, void* workspace, std::size_t workspace_bytes,
                             cudaStream_t stream) {
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t s = cublasLtMatmul(handle, pl.desc, &one, a, pl.a, b, pl.b, &zero, d, pl.d, d, pl.d, &algo,
                                            workspace, workspace_bytes, stream);
    if (s == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
    return s == CUBLAS_STATUS_NOT_SUPPORTED ? cudaErrorNotSupported : cudaErrorLaunchFailure;
}

}  // namespace loradesk::kernels::detail
