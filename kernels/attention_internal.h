// Private to kernels/: launchers shared between the attention kernel files (attention.cu owns the split-K
// merge; attention_decode.cu reuses it so both kernels share one partial layout and one merge). Not part of
// the launchers.h API: callers outside kernels/ use attention() / attention_decode().
#pragma once

#include <cuda_runtime_api.h>

#include "attention_plan.h"
#include "kernel_params.h"

namespace loradesk::kernels::detail {

// Combines the f32 (m, l, acc) partials in workspace (layout: attention_workspace_bytes) of each merge group
// into p.out. Launch only; returns the launch status.
cudaError_t attention_merge(const AttentionParams& p, const AttentionMergeGroup* groups, int n_groups,
                            const float* workspace, cudaStream_t stream);

// attention_decode's Q·K layout: automatic (what attention_decode does: coalesced at head_dim 128 with <= 4 rows
// unless its registers cost a second wave), or forced — coalesced where it applies, else one lane per key.
// decode_attention_bench compares them; everything else calls attention_decode.
enum class DecodeQkLayout { automatic, coalesced, lane_per_key };
// Whether each warp's first 32 keys are copied into shared memory before the PDL wait: automatic (what
// attention_decode does: with the coalesced layout, where it costs no extra wave of blocks), or off.
enum class DecodeStaging { automatic, off };
cudaError_t attention_decode_with(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                                  const AttentionMergeGroup* groups, int n_groups, float* workspace,
                                  DecodeQkLayout layout, DecodeStaging staging, cudaStream_t stream);

}  // namespace loradesk::kernels::detail
