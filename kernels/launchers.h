// CUDA launchers of loradesk_kernels. Every launcher takes raw device pointers (bf16 as uint16_t bit
// patterns), sizes and an explicit stream, launches asynchronously and returns the launch status; none
// throws, logs or synchronizes. Semantics are those of the twins in ref/ref_kernels.h, which tests hold
// the kernels to.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "attention_plan.h"
#include "kernel_params.h"

namespace loradesk::kernels {

// Programmatic dependent launch for every kernel of this library (process-wide, default on): each kernel may
// be scheduled while its predecessor finishes; correctness does not depend on it (launch_pdl.cuh).
// Contract that comes with it: inputs that are weights (GEMM weights, norm weights, rotary frequencies) or step
// metadata (positions, KV slots, row indices, attention plans and page tables) may be read before a kernel's
// PDL wait, so the kernel launched just before must not write them; activations are read only after it.
void set_programmatic_dependent_launch(bool on);

cudaError_t embedding_gather(const uint16_t* table, const int32_t* ids, int n_tokens, int hidden, int vocab, float* out,
                             cudaStream_t stream);
// x_delta / delta (optional): a LoRA delta still to be added to x / gate_up (SgmvParams::delta, the same layout):
// each value is read as bf16(x + delta).
cudaError_t add_rmsnorm(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight,
                        const int32_t* rows, int n_rows, int hidden, float eps, uint16_t* out, cudaStream_t stream);
cudaError_t rope_kv_write(const RopeKvParams& p, cudaStream_t stream);
cudaError_t silu_mul(const uint16_t* gate_up, const float* delta, int n_tokens, int inter, uint16_t* out,
                     cudaStream_t stream);
cudaError_t bias_add(uint16_t* y, int64_t y_row_stride, const uint16_t* bias, int n_tokens, int cols,
                     cudaStream_t stream);
// out[t, i] = x[t, order[i]] for i < cols, out rows cols wide: x's columns in the order of an act-order GPTQ matrix
// sorted by group at load (QuantGemvParams::k_order), so the GEMM kernels read it as a plain GPTQ matrix.
cudaError_t gather_columns(const uint16_t* x, int64_t x_row_stride, const int32_t* order, int n_tokens, int cols,
                           uint16_t* out, cudaStream_t stream);
// Greedy ids: the largest logit of each row, the lowest index among equal ones. workspace: argmax_workspace_bytes
// (n_rows) bytes, zero before the first launch; the kernels leave it zero again. vocab <= 0 or no workspace:
// cudaErrorInvalidValue.
inline std::size_t argmax_workspace_bytes(int n_rows) { return std::size_t(n_rows > 0 ? n_rows : 0) * 16; }
cudaError_t argmax(const float* logits, int n_rows, int vocab, int32_t* out, void* workspace, cudaStream_t stream);
// Grammar-constrained greedy rows: like argmax, but row r only considers the tokens whose bit is set in mask
// masks[mask_of_row[r] * mask_words ...] (bit c % 32 of word c / 32; tokens past mask_words * 32 are not allowed);
// a row with mask_of_row[r] < 0 is unconstrained. A row whose mask allows nothing gets 0.
cudaError_t masked_argmax(const float* logits, int n_rows, int vocab, const uint32_t* masks, const int32_t* mask_of_row,
                          int mask_words, int32_t* out, void* workspace, cudaStream_t stream);

// items/groups are device copies of an AttentionPlan built for p's batch; workspace holds
// attention_workspace_bytes(n_items, ...) bytes.
cudaError_t attention(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                      const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream);

// Skinny GEMM with fused bias / SwiGLU / LoRA epilogues (GemvParams); its first weights are read before the PDL
// wait, so the kernel launched just before must not write p.w. gemv_supported says whether the
// shapes and alignment allow it (callers fall back to cuBLAS + the separate kernels otherwise).
bool gemv_supported(const GemvParams& p);
cudaError_t gemv(const GemvParams& p, cudaStream_t stream);

// Decode-specialised drop-in for attention() (same plan, workspace layout and merge), fast when every
// sequence has one query token (other batches still come out right, just slowly). Needs head_dim 64, 128
// or 256, n_heads / n_kv_heads <= 16 and 16-byte aligned K/V pools; otherwise returns cudaErrorInvalidValue
// without launching, and the caller uses attention(). attention_decode_supported(p) asks that up front.
// The plan (items, groups), the batch arrays (indptrs, page tables) and, for small grids, the K/V rows of every key
// before the sequence's query tokens are read before the kernel waits for its predecessor (PDL): the kernel
// launched just before must write none of them (it may write this step's own keys, as rope_kv_write does). With
// p.merge_counters, split plans are merged by their last block instead of a merge launch.
cudaError_t attention_decode(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                             const AttentionMergeGroup* groups, int n_groups, float* workspace, cudaStream_t stream);
// rope_kv_write(rope) then attention_decode(p, ...), fused into one launch where attention_decode takes its
// coalesced Q·K kernel (one query token per sequence, rope.n_tokens == p.n_seqs, head_dim 128, <= 4 query heads
// per KV head, while that kernel's registers cost no extra wave; rope's pools are p's): each block rotates its q
// rows itself, and the block holding a sequence's new key writes its K and V. The q rows in rope.qkv are then left
// un-rotated (attention reads them nowhere else). Same results as the two launches, bit for bit; unsupported p:
// cudaErrorInvalidValue, nothing run.
cudaError_t attention_decode_rope(const AttentionParams& p, const RopeKvParams& rope, const AttentionWorkItem* items,
                                  int n_items, const AttentionMergeGroup* groups, int n_groups, float* workspace,
                                  cudaStream_t stream);
// Whether attention_decode_rope fuses the RoPE + KV write for these shapes (else it runs rope_kv_write first). A
// pending q|k|v LoRA delta (rope.qkv_delta) does not change the answer: the fused kernel adds it as it loads the rows.
bool attention_decode_rope_fuses(const AttentionParams& p, const RopeKvParams& rope, int n_items, int n_groups);
bool attention_decode_supported(const AttentionParams& p);
// Tensor-core causal attention for prefill-shaped sequences over the same paged layout: tiles (device
// copy, from plan_attention_mixed) name 64-row blocks of sequences; each is computed against all keys up
// to its causal horizon and written straight to p.out (no workspace). head_dim 64, 128 or 256 only; the
// K/V pools must be 16-byte aligned. Invalid shapes or pointers give cudaErrorInvalidValue.
bool attention_prefill_supported(int head_dim);
cudaError_t attention_prefill(const AttentionParams& p, const PrefillTile* tiles, int n_tiles, cudaStream_t stream);

cudaError_t sgmv_shrink(const SgmvParams& p, cudaStream_t stream);
cudaError_t sgmv_expand(const SgmvParams& p, cudaStream_t stream);
// gate|up's expand with the SwiGLU as its epilogue: p's two slices are gate and up, each inter wide, adjacent in y
// (y_row_stride 2 inter, no delta); act[t, c] = bf16(silu(g) * u) for the tokens the segments cover, with g and u
// the values sgmv_expand would leave in y, bit for bit what sgmv_expand then silu_mul write. y is not written.
cudaError_t sgmv_expand_swiglu(const SgmvParams& p, uint16_t* act, cudaStream_t stream);

}  // namespace loradesk::kernels
