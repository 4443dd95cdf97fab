// The block-scaled fp8 GEMM through cuBLASLt (fp8_block_gemm.h). Row-major y [t, n] = xq [t, k] w [n, k]^T is the
// column-major D [n, t] = op_T(A) B with A = w viewed column-major [k, n] (lda k) and B = xq viewed column-major
// [k, t] (ldb k): cuBLASLt's "TN" layout, the only one its fp8 kernels take. A's scales are w_scale read as the
// column-major [k / 128, n / 128] block grid (ld k / 128), B's the [k / 128][t] grid fp8_quantize_rows writes.
#include "fp8_block_gemm.h"

#include <cublasLt.h>

#include <vector>

namespace loradesk::kernels {

struct Fp8BlockGemm::Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;

    ~Plan() {
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (desc) cublasLtMatmulDescDestroy(desc);
    }
};

namespace {

template <class T>
bool set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
    return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace

Fp8BlockGemm::~Fp8BlockGemm() {
    for (auto& [key, plan] : m_plans) delete plan;
    if (m_handle) cublasLtDestroy(static_cast<cublasLtHandle_t>(m_handle));
}

bool fp8_block_gemm_supported(const Fp8BlockGemmParams& p) {
    const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
    return p.n_tokens >= 1 && p.n > 0 && p.n % 128 == 0 && p.k > 0 && p.k % 512 == 0 && p.y_row_stride >= p.n &&
           p.y_row_stride % 8 == 0 && p.w && p.w_scale && p.xq && p.x_scale && p.y && aligned(p.w) && aligned(p.xq) &&
           aligned(p.y) && aligned(p.w_scale) && aligned(p.x_scale);
}

const Fp8BlockGemm::Plan* Fp8BlockGemm::plan(int n_tokens, int n, int k, int64_t ldy, const void* scales) {
    const auto key = std::make_tuple(n_tokens, n, k, ldy);
    if (auto it = m_plans.find(key); it != m_plans.end()) return it->second;
    auto* pl = new Plan;
    m_plans.emplace(key, pl);
    if (cublasLtMatmulDescCreate(&pl->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return pl;
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
                  b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    if (!set_attr(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_t) ||
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_n) ||
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode) ||
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode) ||
        // Without scale pointers the heuristic finds no block-scaled algorithm (H100, cuBLASLt 13.1); run() sets the
        // real ones.
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales) ||
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales))
        return pl;
    if (cublasLtMatrixLayoutCreate(&pl->a, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&pl->b, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n_tokens), k) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&pl->d, CUDA_R_16BF, uint64_t(n), uint64_t(n_tokens), ldy) != CUBLAS_STATUS_SUCCESS)
        return pl;
    cublasLtMatmulPreference_t pref = nullptr;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return pl;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &m_workspace_bytes,
                                         sizeof(m_workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(m_handle), pl->desc, pl->a,
                                                            pl->b, pl->d, pl->d, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
        pl->algo = result.algo;
        pl->ok = true;
    }
    return pl;
}

bool Fp8BlockGemm::init(void* workspace, std::size_t workspace_bytes) {
    m_workspace = workspace, m_workspace_bytes = workspace_bytes;
    if (!m_handle) {
        cublasLtHandle_t h = nullptr;
        if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return m_available = false;
        m_handle = h;
    }
    for (auto& [key, plan] : m_plans) delete plan;  // a new workspace size may change the algorithms
    m_plans.clear();
    m_available = workspace && plan(16, 256, 512, 256, workspace)->ok;
    return m_available;
}

cudaError_t Fp8BlockGemm::run(const Fp8BlockGemmParams& p, cudaStream_t stream) {
    if (!m_available || !fp8_block_gemm_supported(p)) return cudaErrorInvalidValue;
    const Plan* pl = plan(fp8_gemm_rows(p.n_tokens), p.n, p.k, p.y_row_stride, p.w_scale);
    if (!pl->ok) return cudaErrorNotSupported;
    // The scale pointers live in the descriptor: set per call (host-side only; a captured launch keeps them).
    if (!set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(p.w_scale)) ||
        !set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(p.x_scale)))
        return cudaErrorInvalidValue;
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t s =
        cublasLtMatmul(static_cast<cublasLtHandle_t>(m_handle), pl->desc, &one, p.w, pl->a, p.xq, pl->b, &zero, p.y,
                       pl->d, p.y, pl->d, &pl->algo, m_workspace, m_workspace_bytes, stream);
    if (s == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
    return s == CUBLAS_STATUS_NOT_SUPPORTED ? cudaErrorNotSupported : cudaErrorLaunchFailure;
}

}  // namespace loradesk::kernels
