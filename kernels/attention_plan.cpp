// Work decomposition for paged attention; see attention_plan.h.
#include "attention_plan.h"

#include <algorithm>
#include <utility>

namespace loradesk::kernels {

namespace {

int seq_kv_len(const int32_t* kv_indptr, const int32_t* kv_last_page_len, int s, int page_size) {
    int n_pages = kv_indptr[s + 1] - kv_indptr[s];
    return n_pages == 0 ? 0 : (n_pages - 1) * page_size + kv_last_page_len[s];
}

// Keys visible to the last row of the tile [row, row + tile_rows) of a sequence (may be <= 0).
int tile_horizon(int n_q, int kv_len, int group_size, int row, int tile_rows) {
    int last_token = (std::min(row + tile_rows, n_q * group_size) - 1) / group_size;
    return kv_len - n_q + last_token + 1;
}

// Appends sequence s's split-K items and merge groups to plan.
void plan_split_seq(int s, int n_q, int kv_len, int group_size, int kv_chunk, AttentionPlan& plan) {
    int n_rows = n_q * group_size;
    for (int row = 0; row < n_rows; row += kAttentionTileRows) {
        int horizon = tile_horizon(n_q, kv_len, group_size, row, kAttentionTileRows);
        const auto gi = int32_t(plan.groups.size());
        AttentionMergeGroup g{s, row, int32_t(plan.items.size()), 0};
        for (int k = 0; k < horizon; k += kv_chunk)
            plan.items.push_back({s, row, k, std::min(k + kv_chunk, horizon), gi});
        if (horizon <= 0) plan.items.push_back({s, row, 0, 0, gi});
        g.item_end = int32_t(plan.items.size());
        plan.groups.push_back(g);
    }
}

}  // namespace

void plan_attention(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len, int n_seqs,
                    int page_size, int group_size, int kv_chunk, AttentionPlan& plan) {
    plan.items.clear();
    plan.groups.clear();
    for (int s = 0; s < n_seqs; ++s)
        plan_split_seq(s, qo_indptr[s + 1] - qo_indptr[s], seq_kv_len(kv_indptr, kv_last_page_len, s, page_size),
                       group_size, kv_chunk, plan);
}

void plan_attention_mixed(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                          int n_seqs, int page_size, int group_size, int kv_chunk, int min_q, AttentionPlan& split_plan,
                          std::vector<PrefillTile>& tiles) {
    split_plan.items.clear();
    split_plan.groups.clear();
    tiles.clear();
    min_q = std::max(min_q, 1);
    std::vector<std::pair<int, PrefillTile>> ranked;  // (horizon, tile)
    for (int s = 0; s < n_seqs; ++s) {
        int n_q = qo_indptr[s + 1] - qo_indptr[s];
        int kv_len = seq_kv_len(kv_indptr, kv_last_page_len, s, page_size);
        if (n_q < min_q) {
            plan_split_seq(s, n_q, kv_len, group_size, kv_chunk, split_plan);
            continue;
        }
        for (int row = 0; row < n_q * group_size; row += kPrefillTileRows)
            ranked.push_back({tile_horizon(n_q, kv_len, group_size, row, kPrefillTileRows), PrefillTile{s, row}});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    tiles.reserve(ranked.size());
    for (const auto& r : ranked) tiles.push_back(r.second);
}

void plan_attention_splits(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                           int n_seqs, int page_size, int group_size, int n_splits, AttentionPlan& plan) {
    plan.items.clear();
    plan.groups.clear();
    n_splits = std::max(n_splits, 1);
    for (int s = 0; s < n_seqs; ++s) {
        int n_q = qo_indptr[s + 1] - qo_indptr[s];
        int kv_len = seq_kv_len(kv_indptr, kv_last_page_len, s, page_size);
        int n_rows = n_q * group_size;
        for (int row = 0; row < n_rows; row += kAttentionTileRows) {
            int horizon = std::max(tile_horizon(n_q, kv_len, group_size, row, kAttentionTileRows), 0);
            int per = (horizon + n_splits - 1) / n_splits;
            int chunk = std::max((per + 31) / 32 * 32, 32);
            const auto gi = int32_t(plan.groups.size());
            AttentionMergeGroup g{s, row, int32_t(plan.items.size()), 0};
            for (int k = 0; k < n_splits; ++k) {
                int b = std::min(k * chunk, horizon), e = std::min(b + chunk, horizon);
                plan.items.push_back({s, row, b, e, gi});
            }
            g.item_end = int32_t(plan.items.size());
            plan.groups.push_back(g);
        }
    }
}

bool decode_whole_in_4_warps(int64_t blocks, int max_kv, int n_sms) {
    const int64_t sub_tiles = (std::max(max_kv, 1) + 31) / 32, sms = std::max(n_sms, 1);
    const auto cost = [&](int warps, int per_sm) {
        const int64_t slots = int64_t(per_sm) * sms;
        return (blocks + slots - 1) / slots * ((sub_tiles + warps - 1) / warps);
    };
    return cost(4, kDecodeDenseBlocks4) < cost(8, kDecodeDenseBlocks8);
}

int decode_mma_blocks_per_sm(int64_t blocks, int n_sms, int most) {
    const int64_t sms = std::max(n_sms, 1);
    const auto waves = [&](int k) { return (std::max<int64_t>(blocks, 1) + k * sms - 1) / (k * sms); };
    int k = std::min(2, most);
    while (k < most && waves(k) > waves(most)) ++k;
    return k;
}

}  // namespace loradesk::kernels
