// The fp8 GEMM through cuBLASLt (fp8_gemm.h). Row-major y [t, n] = xq [t, k] w [n, k]^T is the column-major
// D [n, t] = op_T(A) B with A = w viewed column-major [k, n] (lda k) and B = xq viewed column-major [k, t] (ldb k):
// cuBLASLt's "TN" layout, the only one its fp8 kernels take. Block-scaled weights: A's scales are w_scale read as
// the column-major [k / 128, n / 128] block grid (ld k / 128), B's the [k / 128][t] grid fp8_quantize_rows writes.
// Per-channel weights: A's scales are a vector over n ("outer vector"), B's a vector over t.
#include "fp8_gemm.h"

#include "lt_plan.h"

namespace loradesk::kernels {

struct Fp8Gemm::Plan : detail::LtPlan {};

Fp8Gemm::Fp8Gemm() = default;  // here, where Plan is complete (members' cleanup names its deleter)

Fp8Gemm::~Fp8Gemm() {
    m_plans.clear();  // their descriptors before the handle
    if (m_handle) cublasLtDestroy(static_cast<cublasLtHandle_t>(m_handle));
}

bool fp8_gemm_supported(const Fp8GemmParams& p) {
    const bool block = p.w_scaling == Fp8Scaling::block128;
    if (p.w_scaling == Fp8Scaling::per_tensor) return false;
    const bool shape = block ? p.n % 128 == 0 && p.k % 512 == 0 : p.n % 16 == 0 && p.k % 16 == 0;
    return shape && p.n_tokens >= 1 && p.n > 0 && p.k > 0 && p.y_row_stride >= p.n && p.y_row_stride % 8 == 0 && p.w &&
           p.w_scale && p.xq && p.x_scale && p.y && detail::aligned16(p.w) && detail::aligned16(p.xq) &&
           detail::aligned16(p.y) && detail::aligned16(p.x_scale) && (!block || detail::aligned16(p.w_scale));
}

const Fp8Gemm::Plan* Fp8Gemm::plan(const Fp8GemmParams& p) {
    const int rows = fp8_gemm_rows(p.n_tokens), n = p.n, k = p.k;
    const auto key = std::make_tuple(p.w_scaling, rows, n, k, p.y_row_stride);
    if (auto it = m_plans.find(key); it != m_plans.end()) return it->second.get();
    Plan* pl = m_plans.emplace(key, std::make_unique<Plan>()).first->second.get();
    if (cublasLtMatmulDescCreate(&pl->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return pl;
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    const int32_t a_mode = p.w_scaling == Fp8Scaling::block128 ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                                               : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    const int32_t b_mode = p.w_scaling == Fp8Scaling::block128 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                                               : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    if (!detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_t) ||
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_n) ||
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode) ||
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode) ||
        // Without scale pointers the heuristic finds no block-scaled algorithm (H100, cuBLASLt 13.1); run() sets the
        // real ones.
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(p.w_scale)) ||
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(p.x_scale)))
        return pl;
    if (cublasLtMatrixLayoutCreate(&pl->a, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&pl->b, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(rows), k) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&pl->d, CUDA_R_16BF, uint64_t(n), uint64_t(rows), p.y_row_stride) !=
            CUBLAS_STATUS_SUCCESS)
        return pl;
    cublasLtMatmulHeuristicResult_t result{};
    if (detail::lt_offers(static_cast<cublasLtHandle_t>(m_handle), *pl, m_workspace_bytes, &result, 1) > 0 &&
        result.state == CUBLAS_STATUS_SUCCESS) {
        pl->algo = result.algo;
        pl->ok = true;
    }
    return pl;
}

bool Fp8Gemm::init(void* workspace, std::size_t workspace_bytes) {
    m_workspace = workspace, m_workspace_bytes = workspace_bytes;
    if (!m_handle) {
        cublasLtHandle_t h = nullptr;
        if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return m_available = false;
        m_handle = h;
    }
    m_plans.clear();  // a new workspace size may change the algorithms
    if (!workspace) return m_available = false;
    Fp8GemmParams probe;  // the heuristic reads no memory: any aligned pointers will do
    probe.w = probe.xq = static_cast<const uint8_t*>(workspace);
    probe.w_scale = probe.x_scale = static_cast<const float*>(workspace);
    probe.y = static_cast<uint16_t*>(workspace), probe.y_row_stride = 256;
    probe.n_tokens = 16, probe.n = 256, probe.k = 512;
    m_available = plan(probe)->ok;
    return m_available;
}

bool Fp8Gemm::takes(const Fp8GemmParams& p) { return m_available && fp8_gemm_supported(p) && plan(p)->ok; }

cudaError_t Fp8Gemm::run(const Fp8GemmParams& p, cudaStream_t stream) {
    if (!m_available || !fp8_gemm_supported(p)) return cudaErrorInvalidValue;
    const Plan* pl = plan(p);
    if (!pl->ok) return cudaErrorNotSupported;
    // The scale pointers live in the descriptor: set per call (host-side only; a captured launch keeps them).
    if (!detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(p.w_scale)) ||
        !detail::set_attr(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(p.x_scale)))
        return cudaErrorInvalidValue;
    return detail::lt_matmul(static_cast<cublasLtHandle_t>(m_handle), *pl, pl->algo, p.w, p.xq, p.y, m_workspace,
                             m_workspace_bytes, stream);
}

}  // namespace loradesk::kernels
