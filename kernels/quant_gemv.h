// CUDA launchers of the weight-only quantized GEMV (kernels/quant_gemv.cu): 1-4 decode tokens against AWQ /
// GPTQ int4 or fp8 weights in their checkpoint layouts (QuantGemvParams). Same contract as launchers.h: raw
// device pointers, an explicit stream, asynchronous, returns the launch status; never throws, logs or syncs.
#pragma once

#include <cuda_runtime_api.h>

#include "quant_params.h"

namespace loradesk::kernels {

// Whether the kernel takes these shapes and pointers: n_tokens 1-4; int4: n % 8 == 0, group_size a multiple of
// 32 up to 1024 that divides k, 16-byte aligned qweight / scales / workspace; fp8: k % 16 == 0, 16-byte aligned
// w_fp8 and x rows. GPTQ act-order (g_idx non-null) takes a slower path: pass g_idx = null when it is k / G.
// k_order is refused (quant_params.h). lora_shrink: fp8 at 1 token only, with the expand, its counters (lora_sync)
// and 16-byte aligned A rows.
bool quant_gemv_supported(const QuantGemvParams& p);
// cudaErrorInvalidValue without launching when !quant_gemv_supported(p). fp8 prefetches its first weights into L2
// before the PDL wait: they must not be written by the kernel launched just before; nor, with lora_shrink, the
// lora_sync pair, which its shrink blocks claim a unit of before that wait.
cudaError_t quant_gemv(const QuantGemvParams& p, cudaStream_t stream);

}  // namespace loradesk::kernels
