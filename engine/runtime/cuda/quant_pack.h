// Host-side packing of a layer's quantized projections for the CUDA runner's quantized kernels
// (kernels/quant_gemv.h for 1-4 tokens, kernels/quant_dequant.h + cuBLAS otherwise). The kernels read the
// checkpoint layouts (quant_params.h) unconverted, so packing is concatenation: the projections of one call site
// (q|k|v, gate|up) become one matrix along out features when their layouts allow it (same groups and g_idx; fp8
// block rows not split), else one part per projection, written into adjacent output columns. Act-order GPTQ rows
// are sorted by group where that gives whole groups, so the fast kernels read them (x gathered to match). Scales become
// the kernels' types (fp16 for int4, f32 for fp8); per-tensor fp8 scales of a fused site become per-channel. Pure host
// code with no CUDA runtime, so CPU-only machines test it (tst_quant_pack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/quantized_linear.h"
#include "quant_params.h"

namespace loradesk {
class ThreadPool;
}

namespace loradesk::runtime::cuda {

// One matrix the kernels read: its shapes and flags in `params` (device pointers filled in at upload; x, y,
// n_tokens and workspace per call), its tensors in the layouts QuantGemvParams names.
struct PackedQuantPart {
    kernels::QuantGemvParams params;
    int out_offset = 0;                           // first output column of this part within the site's output
    std::vector<int32_t> qweight, qzeros, g_idx;  // g_idx empty unless act-order (g_idx[k] != k / G somewhere)
    // Act-order GPTQ whose rows sort into whole groups (as GPTQ's desc_act writes them): qweight's rows sorted by
    // group, k_order[k] the checkpoint row of row k, and g_idx empty (QuantGemvParams::k_order).
    std::vector<int32_t> k_order;
    std::vector<uint16_t> scales;  // int4: fp16 [ceil(K/G), N]
    std::vector<uint8_t> w_fp8;    // fp8 [N, K]
    std::vector<float> w_scale;    // fp8, as params.fp8_scaling indexes it
    std::size_t bytes() const;
    // params pointed at this part's host vectors: what the reference twin (kernels/ref/ref_quant.h) reads.
    kernels::QuantGemvParams host_params() const;
};

struct PackedQuantSite {
    std::vector<PackedQuantPart> parts;  // empty when the kernels cannot read a projection (see why_not)
    std::string why_not;                 // then: the reason, for the load log
    std::size_t bytes() const;
};

// Packs one call site's projections, in output order. Never throws for a layout the kernels cannot take: it
// answers with no parts and the reason (fp8 blocks other than 128x128, int4 scales that fp16 cannot hold
// exactly, AWQ groups that do not divide in_features), and the runner dequantizes that site on upload.
// sort_act_order false keeps every act-order g_idx unsorted: a packing the GEMV reads, of the same bytes as the
// sorted one, for sizing the weight arena without paying for the sort twice. pool, when given, sorts on its threads.
PackedQuantSite pack_quant_site(const std::vector<const model::QuantizedLinear*>& projections,
                                bool sort_act_order = true, ThreadPool* pool = nullptr);

}  // namespace loradesk::runtime::cuda
