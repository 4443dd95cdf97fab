// The CUDA runner's step planner (flashinfer's plan/run split). From a ForwardBatch it computes on the host,
// once per step, everything the launches read: LoRA segments, the attention split/merge plan, the graph bucket
// and the packed int32 metadata block (one MetaLayout for eager and graph steps). Pure host code with no CUDA
// runtime, so CPU-only machines test it; the runner uploads `meta`, binds a StepMeta to the device copy and
// only launches. Kernels see the flat arrays, never these types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention_plan.h"
#include "runtime/forward_batch.h"

namespace loradesk::runtime::cuda {

// Decode graphs pad a batch of sequences to the smallest of these that the workspace holds. Beyond about 128 rows
// the projections are no longer bound by their weight bytes, so every pad row costs GEMM time (hence buckets 32
// apart there), and below, each pad row still costs a block per KV head in the attention (hence 48 and 96).
// H200, Llama-7B, ms per step with powers of two only against these: batch 129 17.13 / 14.54, 160 18.71 / 16.54,
// 192 20.33 / 19.16, 65 10.00 / 9.56 (docs/cuda-benchmarks.md, nineteenth session).
inline constexpr int kGraphBuckets[] = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 160, 192, 224, 256};
// Split-K partials the workspace is planned for (about 66 KB each at 8 KV heads x 128).
inline constexpr int kPlannedAttentionItems = 4096;
// int32 words of one kernels::AttentionWorkItem in the step metadata.
inline constexpr std::size_t kItemInts = sizeof(kernels::AttentionWorkItem) / 4;

// What the planner needs from the model, the KV pool and the device; fixed for a runner once the pool exists.
struct PlannerConfig {
    int page_size = 16;
    int n_heads = 1, n_kv_heads = 1;
    int n_sms = 1;
    bool prefill_kernel = false;  // kernels::attention_prefill_supported(head_dim)
    bool decode_kernel = false;   // kernels::attention_decode_supported(...) for this model and pool
    int scratch_page = 0;         // graph pad rows attend to and write this page (one past the pool)
};

// The workspace a plan must fit: tokens, logits rows, attention work items, int32s of metadata.
struct PlannerLimits {
    int tokens = 0, logits = 0, att_items = 0, meta = 0;
};

// Offsets (int32 units) of each array in the packed block. Both eager and graph steps use this order: the
// per-row arrays, the 16-byte aligned plan structs, and kv_indices last, the only array whose length varies
// between replays of one graph.
struct MetaLayout {
    std::size_t token_ids = 0, positions = 0, kv_slots = 0, qo = 0, kv_indptr = 0, last = 0, seg_indptr = 0,
                seg_slot = 0, logits = 0, items = 0, groups = 0, tiles = 0, kv_indices = 0, total = 0;
    bool operator==(const MetaLayout&) const = default;
};

// The launch shape of one step (graph steps: the bucket's, fixed by the graph key).
struct StepShape {
    int n = 0, n_seqs = 0, n_logits = 0, n_segs = 0, max_seg_len = 0, n_items = 0, n_groups = 0, n_tiles = 0;
    bool any_lora = false;
    bool split_decode_only = false;  // every sequence of the split plan has one query token (attention_decode)
    bool operator==(const StepShape&) const = default;  // field-wise: the struct has padding bytes
};

// A step's shape and pointers into the uploaded meta block.
struct StepMeta : StepShape {
    int max_kv = 0;  // LaunchPlan::max_kv (not part of the shape: a graph replays steps of other contexts)
    const int32_t *token_ids = nullptr, *positions = nullptr, *kv_slots = nullptr, *qo_indptr = nullptr,
                  *kv_indptr = nullptr, *kv_indices = nullptr, *last_len = nullptr, *seg_indptr = nullptr,
                  *seg_slot = nullptr, *logits_idx = nullptr;
    const kernels::AttentionWorkItem* items = nullptr;
    const kernels::AttentionMergeGroup* groups = nullptr;
    const kernels::PrefillTile* tiles = nullptr;  // tensor-core prefill tiles (eager steps only)
};

// One step's plan. Reused from step to step (vectors keep their capacity); not thread-safe.
struct LaunchPlan {
    StepShape shape;
    // Graph steps only: a decode step padded to `bucket` sequences, replayed from the graph keyed by
    // (bucket, shape.any_lora, splits, seg_cap, decode_warps).
    bool graph = false;
    int bucket = 0, splits = 0, seg_cap = 0;
    // The block size attention_decode takes for this step's max_kv, where it depends on it (whole-sequence launches
    // of one query row per KV head: 4 or 8 warps, decode_whole_in_4_warps); else 0.
    int decode_warps = 0;
    int max_kv = 0;  // the longest sequence's keys (AttentionParams::max_kv_len)
    MetaLayout layout;
    std::vector<int32_t> meta;  // [layout.total], what the device copy holds
    // Scratch of the planning itself.
    kernels::AttentionPlan attention;
    std::vector<kernels::PrefillTile> tiles;
    std::vector<int32_t> seg_indptr, seg_slot;
};

// LoRA segments: runs of adjacent sequences with one slot (0 where seq_lora_slot is empty), a run closed
// before it would exceed max_tokens tokens (a sequence is never cut); sequences without tokens are skipped.
// Sequences come sorted by adapter, so each adapter is usually one segment; repeats are still correct.
void lora_segments(const ForwardBatch& b, int max_tokens, std::vector<int32_t>& indptr, std::vector<int32_t>& slot);

// Inputs of the decode split heuristic.
struct DecodeSplitShape {
    int n_seqs = 1;  // sequences of one query token each (a graph's bucket)
    int group_size = 1, n_kv_heads = 1;
    int max_kv = 1;  // longest context in keys
    int n_sms = 1;
    int max_items = kPlannedAttentionItems;
    bool whole_sequence = false;  // the decode kernel runs the step (decode_kernel): its own split table
};

// Split-K ranges per row tile for a decode step. Decode kernel (whole_sequence): one per ~128 keys, at most 16,
// none up to 511 keys, and no more blocks than 2 waves of the SMs (4 waves at group <= 2); while the grid fits the
// SMs once (the staged kernel), none longer than 128 keys. Split kernel: about one
// per 256 keys, more when the batch alone would leave most SMs idle, at most 64. Both within max_items; the
// result may still exceed max_items when even one split does not fit.
int decode_attention_splits(const DecodeSplitShape& s);

// The smallest graph bucket >= n_seqs within the token and logits limits; 0 when none is.
int graph_bucket(int n_seqs, const PlannerLimits& limits);

// Decode steps only (one token per sequence, a logits row for each, in order) that fit a bucket, the
// attention workspace and the metadata: plans the padded graph step and returns true; otherwise false and
// the caller plans the step eagerly.
bool plan_graph_step(const ForwardBatch& b, const PlannerConfig& cfg, const PlannerLimits& limits, LaunchPlan& plan);

// Any step at its exact size. Chunks of the split-K plan coarsen until it fits limits.att_items; the caller
// grows the workspace if the plan still exceeds limits (plan.shape and plan.layout.total say by how much).
void plan_eager_step(const ForwardBatch& b, const PlannerConfig& cfg, const PlannerLimits& limits, LaunchPlan& plan);

// plan's shape with pointers into `meta`, the device copy of plan.meta.
StepMeta bind_step_meta(const LaunchPlan& plan, const int32_t* meta);

}  // namespace loradesk::runtime::cuda
