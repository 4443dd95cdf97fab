// Work decomposition for paged attention; see attention_plan.h.
#include "attention_plan.h"

#include <algorithm>

namespace loradesk::kernels {

void plan_attention(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                    int n_seqs, int page_size, int group_size, int kv_chunk, AttentionPlan& plan) {
    plan.items.clear();
    plan.groups.clear();
    for (int s = 0; s < n_seqs; ++s) {
        int n_q = qo_indptr[s + 1] - qo_indptr[s];
        int n_pages = kv_indptr[s + 1] - kv_indptr[s];
        int kv_len = n_pages == 0 ? 0 : (n_pages - 1) * page_size + kv_last_page_len[s];
        int n_rows = n_q * group_size;
        for (int row = 0; row < n_rows; row += kAttentionTileRows) {
            int last_token = (std::min(row + kAttentionTileRows, n_rows) - 1) / group_size;
            int horizon = kv_len - n_q + last_token + 1;  // keys the tile's last row can see
            AttentionMergeGroup g{s, row, int32_t(plan.items.size()), 0};
            for (int k = 0; k < horizon; k += kv_chunk)
                plan.items.push_back({s, row, k, std::min(k + kv_chunk, horizon)});
            if (horizon <= 0) plan.items.push_back({s, row, 0, 0});
            g.item_end = int32_t(plan.items.size());
            plan.groups.push_back(g);
        }
    }
}

void plan_attention_splits(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                           int n_seqs, int page_size, int group_size, int n_splits, AttentionPlan& plan) {
    plan.items.clear();
    plan.groups.clear();
    n_splits = std::max(n_splits, 1);
    for (int s = 0; s < n_seqs; ++s) {
        int n_q = qo_indptr[s + 1] - qo_indptr[s];
        int n_pages = kv_indptr[s + 1] - kv_indptr[s];
        int kv_len = n_pages == 0 ? 0 : (n_pages - 1) * page_size + kv_last_page_len[s];
        int n_rows = n_q * group_size;
        for (int row = 0; row < n_rows; row += kAttentionTileRows) {
            int last_token = (std::min(row + kAttentionTileRows, n_rows) - 1) / group_size;
            int horizon = std::max(kv_len - n_q + last_token + 1, 0);
            int per = (horizon + n_splits - 1) / n_splits;
            int chunk = std::max((per + 31) / 32 * 32, 32);
            AttentionMergeGroup g{s, row, int32_t(plan.items.size()), 0};
            for (int k = 0; k < n_splits; ++k) {
                int b = std::min(k * chunk, horizon), e = std::min(b + chunk, horizon);
                plan.items.push_back({s, row, b, e});
            }
            g.item_end = int32_t(plan.items.size());
            plan.groups.push_back(g);
        }
    }
}

}  // namespace loradesk::kernels
