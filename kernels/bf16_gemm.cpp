// The bf16 GEMM through cuBLASLt (bf16_gemm.h); the descriptors are lt_describe_bf16's (lt_plan.h), the layout
// cublasGemmEx was called with before.
#include "bf16_gemm.h"

#include <algorithm>

#include "gemm_offer.h"
#include "lt_plan.h"

namespace loradesk::kernels {

struct Bf16Gemm::Plan : detail::LtPlan {};

namespace {

constexpr std::size_t kMaxPlans = 4096;  // prefill meets a new token count per prompt length: start over past this

// p's descriptors, without an algorithm.
bool describe(const Bf16GemmParams& p, detail::LtPlan& pl) {
    return detail::lt_describe_bf16(pl, p.n, p.k, p.n_tokens, p.x_row_stride, p.y_row_stride, p.f32_out);
}

}  // namespace

Bf16Gemm::Bf16Gemm() = default;  // here, where Plan is complete

Bf16Gemm::~Bf16Gemm() {
    m_plans.clear();  // their descriptors before the handle
    m_tuned.clear();
    if (m_handle) cublasLtDestroy(static_cast<cublasLtHandle_t>(m_handle));
}

bool bf16_gemm_supported(const Bf16GemmParams& p) {
    return p.w && p.x && p.y && p.n_tokens > 0 && p.n > 0 && p.k > 0 && p.x_row_stride >= p.k &&
           p.y_row_stride >= p.n && p.x_row_stride % 8 == 0 && p.y_row_stride % (p.f32_out ? 4 : 8) == 0 &&
           p.k % 8 == 0 && detail::aligned16(p.w) && detail::aligned16(p.x) && detail::aligned16(p.y);
}

bool Bf16Gemm::init(void* workspace, std::size_t workspace_bytes) {
    if (workspace_bytes != m_workspace_bytes) m_tuned.clear();  // choices made under another workspace limit
    m_plans.clear();
    m_workspace = workspace, m_workspace_bytes = workspace_bytes;
    if (!m_handle) {
        cublasLtHandle_t h = nullptr;
        if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return m_available = false;
        m_handle = h;
    }
    return m_available = workspace != nullptr;
}

Bf16Gemm::Plan* Bf16Gemm::plan(const Bf16GemmParams& p) {
    const Shape shape{p.n, p.k, p.x_row_stride, p.y_row_stride, p.f32_out};
    if (auto it = m_plans.find({shape, p.n_tokens}); it != m_plans.end()) return it->second.get();
    if (m_plans.size() >= kMaxPlans) m_plans.clear();
    Plan* pl = m_plans.emplace(std::make_pair(shape, p.n_tokens), std::make_unique<Plan>()).first->second.get();
    if (!describe(p, *pl)) return pl;
    const auto handle = static_cast<cublasLtHandle_t>(m_handle);
    // The tuned choice of the nearest tuned count at or above this one, where cuBLASLt takes it for this shape.
    if (auto t = m_tuned.find(shape); t != m_tuned.end())
        if (auto c = t->second.lower_bound(p.n_tokens); c != t->second.end() && c->second->ok) {
            cublasLtMatmulHeuristicResult_t check{};
            if (cublasLtMatmulAlgoCheck(handle, pl->desc, pl->a, pl->b, pl->d, pl->d, &c->second->algo, &check) ==
                    CUBLAS_STATUS_SUCCESS &&
                check.workspaceSize <= m_workspace_bytes) {
                pl->algo = c->second->algo;
                return pl->ok = true, pl;
            }
        }
    cublasLtMatmulHeuristicResult_t result{};
    if (detail::lt_offers(handle, *pl, m_workspace_bytes, &result, 1) > 0 && result.state == CUBLAS_STATUS_SUCCESS)
        pl->algo = result.algo, pl->ok = true;
    return pl;
}

cudaError_t Bf16Gemm::tune(const Bf16GemmParams& p, const uint16_t* const* weights, int n_weights,
                           cudaStream_t stream) {
    if (!m_available || n_weights < 1 ||
        !bf16_gemm_supported({weights[0], p.x, p.y, p.x_row_stride, p.y_row_stride, p.n_tokens, p.n, p.k, p.f32_out}))
        return cudaErrorInvalidValue;
    auto tuned = std::make_unique<Plan>();
    if (!describe(p, *tuned)) return cudaErrorNotSupported;
    const auto handle = static_cast<cublasLtHandle_t>(m_handle);
    cublasLtMatmulHeuristicResult_t offered[kOffers] = {};
    const int found = detail::lt_offers(handle, *tuned, m_workspace_bytes, offered, kOffers);
    if (found < 1) return cudaErrorNotSupported;
    cudaEvent_t start = nullptr, stop = nullptr;
    if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
        if (start) cudaEventDestroy(start);
        cudaGetLastError();
        return cudaErrorMemoryAllocation;
    }
    auto call = [&](const cublasLtMatmulAlgo_t& algo, const uint16_t* w) {
        return detail::lt_matmul(handle, *tuned, algo, w, p.x, p.y, m_workspace, m_workspace_bytes, stream) ==
               cudaSuccess;
    };
    float us[kOffers] = {};
    cudaError_t err = cudaSuccess;
    // Each offer: one untimed call (first-use costs), then one call per matrix, timed together.
    for (int i = 0; i < found && err == cudaSuccess; ++i) {
        if (offered[i].state != CUBLAS_STATUS_SUCCESS || !call(offered[i].algo, weights[0])) continue;
        bool ok = cudaEventRecord(start, stream) == cudaSuccess;
        for (int j = 0; j < n_weights && ok; ++j) ok = call(offered[i].algo, weights[j]);
        float ms = 0.0f;
        if (ok && (err = cudaEventRecord(stop, stream)) == cudaSuccess &&
            (err = cudaEventSynchronize(stop)) == cudaSuccess &&
            (err = cudaEventElapsedTime(&ms, start, stop)) == cudaSuccess)
            us[i] = 1e3f * ms / float(n_weights);
    }
    cudaEventDestroy(start), cudaEventDestroy(stop);
    if (err != cudaSuccess) return err;
    const int pick = pick_gemm_offer(us, std::min(found, kOffers));
    if (pick < 0) return cudaErrorNotSupported;
    tuned->algo = offered[pick].algo, tuned->ok = true;
    const Shape shape{p.n, p.k, p.x_row_stride, p.y_row_stride, p.f32_out};
    m_tuned[shape][p.n_tokens] = std::move(tuned);
    m_plans.clear();  // plans made before this choice re-read it
    return cudaSuccess;
}

bool Bf16Gemm::tuned(const Bf16GemmParams& p) const {
    const auto t = m_tuned.find(Shape{p.n, p.k, p.x_row_stride, p.y_row_stride, p.f32_out});
    return t != m_tuned.end() && t->second.count(p.n_tokens) > 0;
}

cudaError_t Bf16Gemm::run(const Bf16GemmParams& p, cudaStream_t stream) {
    if (!m_available || !bf16_gemm_supported(p)) return cudaErrorInvalidValue;
    const Plan* pl = plan(p);
    if (!pl->ok) return cudaErrorNotSupported;
    return detail::lt_matmul(static_cast<cublasLtHandle_t>(m_handle), *pl, pl->algo, p.w, p.x, p.y, m_workspace,
                             m_workspace_bytes, stream);
}

}  // namespace loradesk::kernels
