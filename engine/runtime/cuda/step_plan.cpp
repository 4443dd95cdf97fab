#include "runtime/cuda/step_plan.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace loradesk::runtime::cuda {

namespace {

constexpr int kKvChunk = 256;  // keys per eager attention work item (split-K granularity), coarsened for huge plans
// Sequences with at least this many new tokens go to the tensor-core prefill kernel (64-row tiles: 16 tokens
// fill one at GQA group 4); shorter ones, decode rows included, to the split-K kernels.
constexpr int kPrefillMinQ = 16;
constexpr int kMaxSplits = 64;
constexpr int kKeysPerSplit = 256;  // split kernel (attention()): long contexts get more splits
// Decode kernel (decode_attention_bench sweep, docs/kernel-benchmarks.md): about one split per 128 keys, at most
// 16, and no more blocks than 2 waves (4 at <= 2 query rows per KV head, whose blocks are lighter).
constexpr int kDecodeKeysPerSplit = 128;
constexpr int kMaxDecodeSplits = 16;
constexpr int kSegTokens = 4;  // graph LoRA segments are cut to this many tokens (one SGMV block row)

int pow2_at_least(int v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

int slot_of(const ForwardBatch& b, int s) { return b.seq_lora_slot.empty() ? 0 : b.seq_lora_slot[std::size_t(s)]; }

bool uses_lora(const ForwardBatch& b) {
    for (int s = 0; s < b.n_seqs(); ++s)
        if (slot_of(b, s) > 0) return true;
    return false;
}

int row_tiles(const PlannerConfig& cfg) {
    const int group = cfg.n_heads / cfg.n_kv_heads;
    return (group + kernels::kAttentionTileRows - 1) / kernels::kAttentionTileRows;
}

MetaLayout meta_layout(const StepShape& sh, std::size_t n_kv_indices) {
    MetaLayout L;
    std::size_t at = 0;
    auto take = [&at](std::size_t n) {
        const std::size_t offset = at;
        at += n;
        return offset;
    };
    const auto n = std::size_t(sh.n), seqs = std::size_t(sh.n_seqs), segs = std::size_t(sh.n_segs);
    L.token_ids = take(n), L.positions = take(n), L.kv_slots = take(n);
    L.qo = take(seqs + 1), L.kv_indptr = take(seqs + 1), L.last = take(seqs);
    L.seg_indptr = take(segs + 1), L.seg_slot = take(segs), L.logits = take(std::size_t(sh.n_logits));
    static_assert(sizeof(kernels::AttentionWorkItem) == 4 * kItemInts && sizeof(kernels::AttentionMergeGroup) == 16);
    static_assert(sizeof(kernels::PrefillTile) == 8);
    at = (at + 3) / 4 * 4;  // 16-byte alignment for the plan structs
    L.items = take(kItemInts * std::size_t(sh.n_items));
    at = (at + 3) / 4 * 4;
    L.groups = take(4 * std::size_t(sh.n_groups));
    L.tiles = take(2 * std::size_t(sh.n_tiles));
    L.kv_indices = take(n_kv_indices);
    L.total = at;
    return L;
}

// Everything but the attention plan into plan.meta (sized by plan.layout). n_pad graph pad rows follow the
// batch's rows: token 0 at position 0 in the scratch page, no adapter; their logits are never read.
void pack_rows(const ForwardBatch& b, const PlannerConfig& cfg, int n_pad, LaunchPlan& plan) {
    const MetaLayout& L = plan.layout;
    std::vector<int32_t>& h = plan.meta;
    h.assign(L.total, 0);
    const int n = b.n_tokens(), n_seqs = b.n_seqs(), n_logits = int(b.logits_indices.size()), ps = cfg.page_size;
    std::copy(b.token_ids.begin(), b.token_ids.end(), h.begin() + L.token_ids);
    std::copy(b.positions.begin(), b.positions.end(), h.begin() + L.positions);
    int32_t* kv_slot = h.data() + L.kv_slots;
    for (int s = 0; s < n_seqs; ++s) {
        const int n_q = b.qo_indptr[s + 1] - b.qo_indptr[s], kv_len = b.kv_len(s);
        for (int i = 0; i < n_q; ++i) {
            const int pos = kv_len - n_q + i;
            *kv_slot++ = b.kv_indices[std::size_t(b.kv_indptr[s] + pos / ps)] * ps + pos % ps;
        }
    }
    std::copy(b.qo_indptr.begin(), b.qo_indptr.end(), h.begin() + L.qo);
    std::copy(b.kv_indptr.begin(), b.kv_indptr.end(), h.begin() + L.kv_indptr);
    std::copy(b.kv_last_page_len.begin(), b.kv_last_page_len.end(), h.begin() + L.last);
    std::copy(plan.seg_indptr.begin(), plan.seg_indptr.end(), h.begin() + L.seg_indptr);
    std::copy(plan.seg_slot.begin(), plan.seg_slot.end(), h.begin() + L.seg_slot);
    std::copy(b.logits_indices.begin(), b.logits_indices.end(), h.begin() + L.logits);
    std::copy(b.kv_indices.begin(), b.kv_indices.end(), h.begin() + L.kv_indices);
    for (int p = 0; p < n_pad; ++p) {
        const std::size_t r = std::size_t(n_seqs + p);
        h[L.kv_slots + std::size_t(n + p)] = cfg.scratch_page * ps;
        h[L.qo + r + 1] = h[L.qo + r] + 1;
        h[L.kv_indptr + r + 1] = h[L.kv_indptr + r] + 1;
        h[L.last + r] = 1;
        h[L.logits + std::size_t(n_logits + p)] = n + p;
        h[L.kv_indices + b.kv_indices.size() + std::size_t(p)] = cfg.scratch_page;
    }
    // Pad segments (graph steps) use slot 0: one pad row each, then empty (a graph has a segment per row, so every pad
    // row gets one). Their SGMV blocks leave y as it is and write a zero delta, and the gate|up expand that applies the
    // SwiGLU (sgmv_expand_swiglu) writes those rows' activation too.
    for (std::size_t g = plan.seg_slot.size(); g < std::size_t(plan.shape.n_segs); ++g)
        h[L.seg_indptr + g + 1] = std::min(h[L.seg_indptr + g] + 1, plan.shape.n), h[L.seg_slot + g] = 0;
}

// memcpy of an empty vector would pass its null data() pointer, which memcpy forbids even for 0 bytes.
template <class T>
void copy_into(int32_t* dst, const std::vector<T>& src) {
    if (!src.empty()) std::memcpy(dst, src.data(), src.size() * sizeof(T));
}

void pack_attention(LaunchPlan& plan) {
    int32_t* h = plan.meta.data();
    copy_into(h + plan.layout.items, plan.attention.items);
    copy_into(h + plan.layout.groups, plan.attention.groups);
    copy_into(h + plan.layout.tiles, plan.tiles);
}

// Prefill tiles for long new-token runs, split-K items for the rest. Long prompts over long cached prefixes
// would need more split-K partials than the planned workspace holds: coarser chunks keep the plan within it
// (each tile still gets its own blocks).
void plan_eager_attention(const ForwardBatch& b, const PlannerConfig& cfg, int max_items, LaunchPlan& plan) {
    const int group = cfg.n_heads / cfg.n_kv_heads, min_q = cfg.prefill_kernel ? kPrefillMinQ : (1 << 30);
    for (int chunk = kKvChunk;; chunk *= 2) {
        kernels::plan_attention_mixed(b.qo_indptr.data(), b.kv_indptr.data(), b.kv_last_page_len.data(), b.n_seqs(),
                                      cfg.page_size, group, chunk, min_q, plan.attention, plan.tiles);
        if (int(plan.attention.items.size()) <= max_items || chunk >= (1 << 20)) break;
    }
    StepShape& sh = plan.shape;
    sh.n_items = int(plan.attention.items.size());
    sh.n_groups = int(plan.attention.groups.size());
    sh.n_tiles = int(plan.tiles.size());
    sh.split_decode_only = true;
    for (int s = 0; s < b.n_seqs(); ++s) {
        const int n_q = b.qo_indptr[s + 1] - b.qo_indptr[s];
        if (n_q > 1 && n_q < min_q) sh.split_decode_only = false;
    }
}

// Graph LoRA segments are cut to kSegTokens tokens so that the SGMV grid (bucket segments x 1 block row) is
// fixed. When no two neighbours share an adapter every segment is one token, and the SGMV kernels have a
// one-token variant: capture with that cap (part of the graph key) instead.
int graph_segment_cap(const ForwardBatch& b, bool any_lora) {
    for (int s = 1; s < b.n_seqs() && any_lora; ++s)
        if (slot_of(b, s) == slot_of(b, s - 1)) return kSegTokens;
    return 1;
}

}  // namespace

void lora_segments(const ForwardBatch& b, int max_tokens, std::vector<int32_t>& indptr, std::vector<int32_t>& slot) {
    indptr.assign(1, 0);
    slot.clear();
    for (int s = 0; s < b.n_seqs(); ++s) {
        const int begin = b.qo_indptr[s], end = b.qo_indptr[s + 1];
        if (end == begin) continue;
        if (slot.empty() || slot.back() != slot_of(b, s) || end - indptr[indptr.size() - 2] > max_tokens) {
            slot.push_back(slot_of(b, s));
            indptr.push_back(end);
        } else {
            indptr.back() = end;
        }
    }
}

int decode_attention_splits(const DecodeSplitShape& s) {
    const int tiles = (s.group_size + kernels::kAttentionTileRows - 1) / kernels::kAttentionTileRows;
    const int blocks = s.n_seqs * tiles * s.n_kv_heads;  // per split
    int splits = 1;
    if (s.whole_sequence) {
        // The decode kernel: one block per sequence and KV head walks short contexts fastest (8 warps; 4 for one
        // query row once the grid outgrows a wave, attention_decode.cu); beyond, the walk is the bound and splits of
        // ~128 keys (4-warp blocks, merged by the group's last block) win while the grid stays within a few waves.
        // Two splits never beat one whole-sequence block.
        while (splits < kMaxDecodeSplits && 2 * splits * kDecodeKeysPerSplit <= s.max_kv) splits *= 2;
        // While the grid holds at most one block per SM, the kernel stages each warp's first 32 keys in shared
        // memory before the PDL wait, and a split whose keys all fit those sub-tiles (4 warps x 32) walks nothing
        // after the wait but shared memory. One more key is a second round through L2 / DRAM, which in a real step
        // is the walk's longest part (H100, Qwen3-0.6B / 8B batch 1 at 513-640 keys, probed with %globaltimer:
        // 2.5 / 4-6 us for the staged round, another 4 / 5.5 us for a 32-key remainder). So while doubling keeps
        // the grid within the SMs, splits of at most 128 keys.
        while (splits < kMaxDecodeSplits && splits * kDecodeKeysPerSplit < s.max_kv &&
               2 * int64_t(blocks) * splits <= s.n_sms)
            splits *= 2;
        const int64_t max_blocks = int64_t(s.n_sms) * (s.group_size <= 2 ? 4 : 2);
        while (splits > 1 && int64_t(blocks) * splits > max_blocks) splits /= 2;
        if (splits == 2) splits = 1;
    } else {
        // The split kernel: about one split per kKeysPerSplit keys, and up to 8 more when the batch alone would
        // leave most SMs idle (about two waves); each split costs a partial that the merge must read back.
        const int fill = pow2_at_least((s.n_sms + blocks - 1) / blocks);
        const int per_keys = pow2_at_least((s.max_kv + kKeysPerSplit - 1) / kKeysPerSplit);
        splits =
            std::min(std::max(per_keys, std::min(fill, std::min(8, pow2_at_least((s.max_kv + 63) / 64)))), kMaxSplits);
    }
    while (splits > 1 && s.n_seqs * tiles * splits > s.max_items) splits /= 2;
    return splits;
}

int graph_bucket(int n_seqs, const PlannerLimits& limits) {
    for (int k : kGraphBuckets)
        if (k >= n_seqs && k <= limits.tokens && k <= limits.logits) return k;
    return 0;
}

bool plan_graph_step(const ForwardBatch& b, const PlannerConfig& cfg, const PlannerLimits& limits, LaunchPlan& plan) {
    const int n = b.n_tokens();
    if (n == 0 || n != b.n_seqs() || int(b.logits_indices.size()) != n) return false;
    for (int i = 0; i < n; ++i)
        if (b.logits_indices[std::size_t(i)] != i) return false;
    const int B = graph_bucket(n, limits);
    if (B == 0) return false;
    const int group = cfg.n_heads / cfg.n_kv_heads, tiles = row_tiles(cfg);
    int max_kv = 1;
    for (int s = 0; s < n; ++s) max_kv = std::max(max_kv, b.kv_len(s));
    const int splits =
        decode_attention_splits({B, group, cfg.n_kv_heads, max_kv, cfg.n_sms, limits.att_items, cfg.decode_kernel});
    if (B * tiles * splits > limits.att_items) return false;

    StepShape sh;
    sh.n = sh.n_seqs = sh.n_logits = sh.n_segs = B;
    sh.n_items = B * tiles * splits, sh.n_groups = B * tiles;
    sh.any_lora = uses_lora(b), sh.split_decode_only = true;
    const MetaLayout layout = meta_layout(sh, b.kv_indices.size() + std::size_t(B - n));
    if (layout.total > std::size_t(limits.meta)) return false;  // page tables beyond the plan: eager grows it

    plan.max_kv = max_kv;
    plan.graph = true, plan.bucket = B, plan.splits = splits;
    plan.decode_warps = group == 1 && splits == 1 && cfg.decode_kernel
                            ? (kernels::decode_whole_in_4_warps(int64_t(B) * cfg.n_kv_heads, max_kv, cfg.n_sms) ? 4 : 8)
                            : 0;
    plan.seg_cap = graph_segment_cap(b, sh.any_lora);
    sh.max_seg_len = plan.seg_cap;
    plan.shape = sh, plan.layout = layout;
    lora_segments(b, plan.seg_cap, plan.seg_indptr, plan.seg_slot);
    pack_rows(b, cfg, B - n, plan);
    // Planned from the padded arrays: pad rows get their (one-key) items too, so the grid depends on B only.
    const int32_t* h = plan.meta.data();
    kernels::plan_attention_splits(h + layout.qo, h + layout.kv_indptr, h + layout.last, B, cfg.page_size, group,
                                   splits, plan.attention);
    plan.tiles.clear();
    pack_attention(plan);
    return true;
}

void plan_eager_step(const ForwardBatch& b, const PlannerConfig& cfg, const PlannerLimits& limits, LaunchPlan& plan) {
    plan.graph = false, plan.bucket = plan.splits = plan.seg_cap = plan.decode_warps = 0;
    StepShape& sh = plan.shape;
    sh = StepShape{};
    sh.n = b.n_tokens(), sh.n_seqs = b.n_seqs(), sh.n_logits = int(b.logits_indices.size());
    plan.max_kv = 0;
    for (int s = 0; s < sh.n_seqs; ++s) plan.max_kv = std::max(plan.max_kv, b.kv_len(s));
    sh.any_lora = uses_lora(b);
    plan_eager_attention(b, cfg, limits.att_items, plan);
    lora_segments(b, INT_MAX, plan.seg_indptr, plan.seg_slot);
    sh.n_segs = int(plan.seg_slot.size());
    for (int g = 0; g < sh.n_segs; ++g)
        sh.max_seg_len = std::max(sh.max_seg_len, plan.seg_indptr[g + 1] - plan.seg_indptr[g]);
    plan.layout = meta_layout(sh, b.kv_indices.size());
    pack_rows(b, cfg, 0, plan);
    pack_attention(plan);
}

StepMeta bind_step_meta(const LaunchPlan& plan, const int32_t* meta) {
    StepMeta sm;
    static_cast<StepShape&>(sm) = plan.shape;
    sm.max_kv = plan.max_kv;
    const MetaLayout& L = plan.layout;
    sm.token_ids = meta + L.token_ids, sm.positions = meta + L.positions, sm.kv_slots = meta + L.kv_slots;
    sm.qo_indptr = meta + L.qo, sm.kv_indptr = meta + L.kv_indptr, sm.kv_indices = meta + L.kv_indices;
    sm.last_len = meta + L.last, sm.seg_indptr = meta + L.seg_indptr, sm.seg_slot = meta + L.seg_slot;
    sm.logits_idx = meta + L.logits;
    sm.items = reinterpret_cast<const kernels::AttentionWorkItem*>(meta + L.items);
    sm.groups = reinterpret_cast<const kernels::AttentionMergeGroup*>(meta + L.groups);
    sm.tiles = plan.shape.n_tiles > 0 ? reinterpret_cast<const kernels::PrefillTile*>(meta + L.tiles) : nullptr;
    return sm;
}

}  // namespace loradesk::runtime::cuda
