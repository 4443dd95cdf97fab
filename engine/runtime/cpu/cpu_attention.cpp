// Paged KV writes and causal GQA attention; see cpu_attention.h.
#include "runtime/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/cpu/cpu_ops.h"

namespace loradesk::runtime::cpu {

void write_kv(const PagedKvLayer& kv, const ForwardBatch& b, const float* k, const float* v) {
    const std::size_t kv_dim = std::size_t(kv.n_kv_heads) * kv.head_dim;
    for (int s = 0; s < b.n_seqs(); ++s) {
        const int q_len = b.qo_indptr[s + 1] - b.qo_indptr[s];
        const int first_slot = b.kv_len(s) - q_len;
        for (int i = 0; i < q_len; ++i) {
            const std::size_t t = std::size_t(b.qo_indptr[s] + i);
            for (int h = 0; h < kv.n_kv_heads; ++h) {
                const std::size_t dst = kv.offset(b, s, first_slot + i, h);
                std::memcpy(kv.k + dst, k + t * kv_dim + std::size_t(h) * kv.head_dim, sizeof(float) * kv.head_dim);
                std::memcpy(kv.v + dst, v + t * kv_dim + std::size_t(h) * kv.head_dim, sizeof(float) * kv.head_dim);
            }
        }
    }
}

void paged_attention(const PagedKvLayer& kv, const ForwardBatch& b, const float* q, int n_heads, float scale,
                     float* out, ThreadPool& pool) {
    const int n_tokens = b.n_tokens();
    const int hd = kv.head_dim;
    const int group = n_heads / kv.n_kv_heads;
    std::vector<int> token_seq(static_cast<std::size_t>(n_tokens));
    for (int s = 0; s < b.n_seqs(); ++s)
        for (int t = b.qo_indptr[s]; t < b.qo_indptr[s + 1]; ++t) token_seq[std::size_t(t)] = s;
    pool.parallel_for(std::size_t(n_tokens) * std::size_t(n_heads), [&](std::size_t begin, std::size_t end) {
        std::vector<float> scores;
        std::vector<float> acc(static_cast<std::size_t>(hd));
        for (std::size_t job = begin; job < end; ++job) {
            const int t = int(job / std::size_t(n_heads)), h = int(job % std::size_t(n_heads));
            const int s = token_seq[std::size_t(t)];
            const int q_len = b.qo_indptr[s + 1] - b.qo_indptr[s];
            const int own_slot = b.kv_len(s) - q_len + (t - b.qo_indptr[s]);
            const int n_keys = own_slot + 1;
            const int kvh = h / group;
            const float* qv = q + (std::size_t(t) * n_heads + std::size_t(h)) * hd;
            scores.resize(std::size_t(n_keys));
            float max_score = -INFINITY;
            for (int j = 0; j < n_keys; ++j) {
                scores[std::size_t(j)] = dot(qv, kv.k + kv.offset(b, s, j, kvh), hd) * scale;
                max_score = std::max(max_score, scores[std::size_t(j)]);
            }
            float denom = 0;
            for (float& x : scores) {
                x = std::exp(x - max_score);
                denom += x;
            }
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int j = 0; j < n_keys; ++j) {
                const float w = scores[std::size_t(j)] / denom;
                const float* vv = kv.v + kv.offset(b, s, j, kvh);
                for (int d = 0; d < hd; ++d) acc[std::size_t(d)] += w * vv[d];
            }
            std::memcpy(out + (std::size_t(t) * n_heads + std::size_t(h)) * hd, acc.data(), sizeof(float) * hd);
        }
    });
}

}  // namespace loradesk::runtime::cpu
