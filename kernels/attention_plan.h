// Host-side planning for the paged attention kernels (flashinfer's plan/run split): the batch is cut
// into work items of kAttentionTileRows query rows (token x head-in-group) by at most kv_chunk keys, so
// that long contexts are split over many blocks (split-K), then merged per row tile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loradesk::kernels {

constexpr int kAttentionTileRows = 16;

struct AttentionWorkItem {
    int32_t seq;
    int32_t row_begin;  // row = token_in_seq * group_size + head_in_group
    int32_t kv_begin;   // keys [kv_begin, kv_end) of the sequence
    int32_t kv_end;
    int32_t merge_group;  // index of the item's AttentionMergeGroup (the decode kernel's fused merge finds it so)
};

struct AttentionMergeGroup {
    int32_t seq;
    int32_t row_begin;
    int32_t item_begin;  // the group's items are [item_begin, item_end)
    int32_t item_end;
};

struct AttentionPlan {
    std::vector<AttentionWorkItem> items;
    std::vector<AttentionMergeGroup> groups;
};

// Fills plan (reusing its capacity) from host copies of the batch arrays. kv_chunk is a multiple of 32.
// Rows past the causal horizon of a tile never read the keys that only later rows see.
void plan_attention(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len, int n_seqs,
                    int page_size, int group_size, int kv_chunk, AttentionPlan& plan);

// Graph-friendly variant (CUDA graph replays bake the grid): exactly n_splits items per row tile, the
// tile's causal horizon cut into n_splits ranges of equal 32-key-multiple length (trailing ones may be
// empty, kv_begin == kv_end; the kernel writes an empty partial for them). So the item and group counts
// depend only on the batch shape (sequences x tokens), never on the context lengths.
void plan_attention_splits(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                           int n_seqs, int page_size, int group_size, int n_splits, AttentionPlan& plan);

// Tensor-core prefill (attention_prefill in launchers.h): one block owns kPrefillTileRows flattened rows of
// one sequence against every key up to the tile's causal horizon, for one KV head; no split-K, no merge.
constexpr int kPrefillTileRows = 64;

struct PrefillTile {
    int32_t seq;
    int32_t row_begin;  // rows [row_begin, row_begin + kPrefillTileRows), clipped to n_q * group_size
};

// Sequences with n_q >= min_q go to prefill tiles (longest causal horizon first, so the longest blocks
// start in the first wave and the tail is short); the others are planned exactly as plan_attention would
// plan them alone. Both outputs are cleared first. With no qualifying sequence, split_plan equals
// plan_attention's result and tiles is empty. min_q < 1 counts as 1.
void plan_attention_mixed(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* kv_last_page_len,
                          int n_seqs, int page_size, int group_size, int kv_chunk, int min_q, AttentionPlan& split_plan,
                          std::vector<PrefillTile>& tiles);

// Whole-sequence decode launches of one query row per KV head (attention_decode at group 1, Llama-style MHA) run blocks
// of 4 or 8 warps, each warp walking 32-key sub-tiles in turn; compiled for grids of more than one wave, an SM holds
// this many of each (the dense kernels' __launch_bounds__).
constexpr int kDecodeDenseBlocks8 = 3, kDecodeDenseBlocks4 = 6;

// Whether such a launch of `blocks` blocks (sequences x KV heads), whose longest sequence has max_kv keys, takes 4-warp
// blocks: the block size with fewer waves x sub-tile rounds per block (the busiest warp's), since a block ends with
// its busiest warp and a wave with its longest block. H200, Llama-7B steps (ms): batch 128 x 512 keys 4 warps (6 waves
// x 5 rounds = 30 against 11 x 3) 14.54 against 15.39 for 8; batch 32 x 2048 8 warps (3 x 9 = 27 against 2 x 17) 12.97
// against 14.26 for 4; batch 16 x 2048 4 warps (17 against 18) 8.59 against 9.70.
bool decode_whole_in_4_warps(int64_t blocks, int max_kv, int n_sms);

// Blocks per SM for a launch of `blocks` blocks of the tensor-core decode walk, of which an SM holds at most `most`:
// as few (from 2) as still give the launch its fewest waves. More blocks per SM walk faster while every wave is full
// but spread a partial last wave thinner. H200, ms per step with 3 against 2: Qwen3-8B batch 128 (1,024 blocks, 3
// waves against 4) 8.64 against 8.95-9.04; batch 64 (512 blocks, 2 waves either way) 6.95 against 6.87-6.88.
int decode_mma_blocks_per_sm(int64_t blocks, int n_sms, int most);

// Bytes of f32 workspace the plan needs: per item, per kv head, per row: m, l and head_dim sums.
inline std::size_t attention_workspace_bytes(std::size_t n_items, int n_kv_heads, int head_dim) {
    return n_items * std::size_t(n_kv_heads) * kAttentionTileRows * std::size_t(head_dim + 2) * sizeof(float);
}

// int32 merge counters (AttentionParams::merge_counters) for plans of up to n_groups merge groups.
inline std::size_t attention_decode_counters(std::size_t n_groups, int n_kv_heads) {
    return n_groups * std::size_t(n_kv_heads);
}

}  // namespace loradesk::kernels
