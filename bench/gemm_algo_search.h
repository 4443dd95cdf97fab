// gemm_algo_bench --search: cuBLASLt configurations beyond what its heuristic offers, for one bf16 projection. The
// heuristic names at most 8 algorithms per shape (the runner times those, kernels/bf16_gemm.h); this enumerates
// every algorithm id cuBLASLt has for bf16 in / f32 compute, and per id (a) what the heuristic offers when limited to
// it (CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID) and (b) each tile x stages x split-K (1, 2, 3, 4, 6, 8, with each reduction
// scheme the id supports) that cublasLtMatmulAlgoCheck accepts within the workspace. Every candidate is timed
// briefly over the rotating weight copies; the fastest kFinalists are timed as the heuristic's offers are, and
// checked against the reference output first. Private to bench/ (gemm_algo_bench.cpp includes it once).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "lt_plan.h"

namespace gemm_search {

constexpr int kMaxIds = 512, kMaxPerId = 16, kFinalists = 12, kMaxCandidates = 4000;

struct Candidate {
    cublasLtMatmulAlgo_t algo;
    std::string what;
    float ms = 0.0f;
};

template <class T>
T cap(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
    T v{};
    std::size_t written = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written);
    return v;
}

inline std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
    std::size_t bytes = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
        return {0};
    std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
    cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), bytes, &bytes);
    return ids.empty() ? std::vector<uint32_t>{0} : ids;
}

template <class T>
bool config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T v) {
    return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS;
}

inline std::string describe(const cublasLtMatmulAlgo_t& algo) {
    auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
        uint32_t v = 0;
        std::size_t written = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
        return v;
    };
    int id = 0;
    std::size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written);
    char buf[160];
    std::snprintf(buf, sizeof(buf), "id %d tile %u stages %u splitK %u red %u swz %u opt %u cluster %u", id,
                  get(CUBLASLT_ALGO_CONFIG_TILE_ID), get(CUBLASLT_ALGO_CONFIG_STAGES_ID),
                  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                  get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
                  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
    return buf;
}

// Every candidate configuration for pl's shape within workspace_bytes, (a) and (b) of the file comment.
inline std::vector<Candidate> enumerate(cublasLtHandle_t lt, const loradesk::kernels::detail::LtPlan& pl,
                                        std::size_t workspace_bytes) {
    std::vector<Candidate> out;
    int ids[kMaxIds], n_ids = 0;
    if (cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                 kMaxIds, ids, &n_ids) != CUBLAS_STATUS_SUCCESS)
        return out;
    auto accept = [&](const cublasLtMatmulAlgo_t& algo) {
        cublasLtMatmulHeuristicResult_t r{};
        if (cublasLtMatmulAlgoCheck(lt, pl.desc, pl.a, pl.b, pl.d, pl.d, &algo, &r) != CUBLAS_STATUS_SUCCESS ||
            r.workspaceSize > workspace_bytes)
            return false;
        out.push_back({algo, describe(algo)});
        return true;
    };
    for (int i = 0; i < n_ids && int(out.size()) < kMaxCandidates; ++i) {
        cublasLtMatmulAlgo_t base{};
        if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                   CUDA_R_16BF, ids[i], &base) != CUBLAS_STATUS_SUCCESS)
            continue;
        {  // (a) the heuristic, limited to this id
            cublasLtMatmulPreference_t pref = nullptr;
            cublasLtMatmulPreferenceCreate(&pref);
            const uint32_t mode = CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID;
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &mode, sizeof(mode));
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                 sizeof(workspace_bytes));
            cublasLtMatmulHeuristicResult_t res[kMaxPerId];
            for (auto& r : res) r.algo = base;
            int found = 0;
            if (cublasLtMatmulAlgoGetHeuristic(lt, pl.desc, pl.a, pl.b, pl.d, pl.d, pref, kMaxPerId, res, &found) ==
                CUBLAS_STATUS_SUCCESS)
                for (int j = 0; j < found; ++j)
                    if (res[j].state == CUBLAS_STATUS_SUCCESS)
                        out.push_back({res[j].algo, describe(res[j].algo) + " h"});
            cublasLtMatmulPreferenceDestroy(pref);
        }
        // (b) tiles x stages x split-K
        const bool split_ok = cap<int32_t>(base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
        const uint32_t schemes = cap<uint32_t>(base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
        for (uint32_t tile : cap_ids(base, CUBLASLT_ALGO_CAP_TILE_IDS))
            for (uint32_t stages : cap_ids(base, CUBLASLT_ALGO_CAP_STAGES_IDS))
                for (uint32_t split : {1u, 2u, 3u, 4u, 6u, 8u}) {
                    if (split > 1 && !split_ok) break;
                    for (uint32_t red : {0u, 1u, 2u, 4u}) {
                        if ((split == 1) != (red == 0) || (red && !(schemes & red))) continue;
                        cublasLtMatmulAlgo_t a = base;
                        if (!config(a, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
                            !config(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages) ||
                            !config(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split) ||
                            !config(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, red))
                            continue;
                        accept(a);
                        if (int(out.size()) >= kMaxCandidates) return out;
                    }
                }
    }
    return out;
}

// Times every candidate briefly (quick(algo): ms, or a negative value where it failed), keeps the kFinalists
// fastest and times them again with full(algo); returns them, fastest first.
inline std::vector<Candidate> rank(std::vector<Candidate> cands,
                                   const std::function<float(const cublasLtMatmulAlgo_t&)>& quick,
                                   const std::function<float(const cublasLtMatmulAlgo_t&)>& full) {
    std::vector<Candidate> ok;
    for (Candidate& c : cands) {
        c.ms = quick(c.algo);
        if (c.ms > 0.0f) ok.push_back(c);
    }
    std::sort(ok.begin(), ok.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
    if (ok.size() > std::size_t(kFinalists)) ok.resize(kFinalists);
    std::vector<Candidate> out;
    for (Candidate& c : ok) {
        c.ms = full(c.algo);
        if (c.ms > 0.0f) out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
    return out;
}

}  // namespace gemm_search
