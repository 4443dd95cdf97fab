// Reference twin of the paged attention kernels (decode and prefill alike): per query token and head,
// a plain two-pass softmax over the visible keys of its sequence, read through the page table.
#include <cmath>
#include <vector>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::ref {

void attention(const AttentionParams& p) {
    const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads;
    std::vector<float> scores;
    std::vector<double> acc(hd);
    for (int s = 0; s < p.n_seqs; ++s) {
        int q_begin = p.qo_indptr[s], n_q = p.qo_indptr[s + 1] - q_begin;
        int n_pages = p.kv_indptr[s + 1] - p.kv_indptr[s];
        int kv_len = n_pages == 0 ? 0 : (n_pages - 1) * p.page_size + p.kv_last_page_len[s];
        auto slot = [&](int j) {
            return int64_t(p.kv_indices[p.kv_indptr[s] + j / p.page_size]) * p.page_size + j % p.page_size;
        };
        for (int i = 0; i < n_q; ++i) {
            int t = q_begin + i, q_pos = kv_len - n_q + i;
            for (int h = 0; h < p.n_heads; ++h) {
                int kvh = h / group;
                const uint16_t* q = p.q + t * p.q_row_stride + int64_t(h) * hd;
                scores.assign(q_pos + 1, 0.0f);
                float mx = -INFINITY;
                for (int j = 0; j <= q_pos; ++j) {
                    const uint16_t* k = p.k_pages + (slot(j) * p.n_kv_heads + kvh) * hd;
                    double dot = 0;
                    for (int d = 0; d < hd; ++d) dot += double(bf16_to_f32(q[d])) * bf16_to_f32(k[d]);
                    scores[j] = float(dot) * p.scale;
                    mx = std::max(mx, scores[j]);
                }
                double denom = 0;
                std::fill(acc.begin(), acc.end(), 0.0);
                for (int j = 0; j <= q_pos; ++j) {
                    double w = std::exp(double(scores[j]) - mx);
                    denom += w;
                    const uint16_t* v = p.v_pages + (slot(j) * p.n_kv_heads + kvh) * hd;
                    for (int d = 0; d < hd; ++d) acc[d] += w * bf16_to_f32(v[d]);
                }
                uint16_t* o = p.out + int64_t(t) * p.n_heads * hd + int64_t(h) * hd;
                for (int d = 0; d < hd; ++d) o[d] = f32_to_bf16(denom > 0 ? float(acc[d] / denom) : 0.0f);
            }
        }
    }
}

}  // namespace loradesk::kernels::ref
