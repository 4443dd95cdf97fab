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

// Split-K decode partials with several lanes per key (attention_decode_groups.cu): same partial layout as
// attention_decode's split mode. Supported for head_dim 64/128, group <= 4 and 16-byte aligned q rows.
bool attention_decode_groups_supported(const AttentionParams& p);
cudaError_t attention_decode_groups(const AttentionParams& p, const AttentionWorkItem* items, int n_items,
                                    float* workspace, cudaStream_t stream);

}  // namespace loradesk::kernels::detail
