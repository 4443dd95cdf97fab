// Which kernels a quantized call site tries in a step, in order (the step planner's choice for quantized
// projections; pure host code, tested without a GPU). A kernel may still refuse the site's shapes (act-order
// GPTQ for quant_mma, 5+ tokens for quant_gemv, odd widths): the runner then tries the next attempt, and after
// the last dequantizes to bf16 for cuBLAS. Each rule is a measurement on Qwen3-8B shapes (docs/quantization.md).
#pragma once

#include <array>

namespace loradesk::runtime::cuda {

enum class QuantKernel {
    gemv,  // kernels::quant_gemv, 1-4 tokens, the LoRA expand always in its epilogue
    mma,   // kernels::quant_mma, up to 64 int4 / 32 fp8 tokens
};

struct QuantAttempt {
    QuantKernel kernel = QuantKernel::mma;
    bool fuse_lora = false;  // quant_mma: the expand in its epilogue (else SGMV launches follow)
    // The shrink in the kernel's own launch (else an sgmv_shrink before): quant_mma with fuse_lora, the fp8 GEMV at
    // 1 token.
    bool fuse_shrink = false;
    // LoRA runs around the kernel (the runner's begin_lora / end_lora), the GEMV's included.
    bool lora_around = false;

    bool fuses_lora() const { return !lora_around && (kernel == QuantKernel::gemv || fuse_lora); }
    bool operator==(const QuantAttempt&) const = default;
};

using QuantRoute = std::array<QuantAttempt, 2>;

// The fused LoRA routes below are taken with CudaRunnerOptions::quant_lora_delta off; on (the default) a site below 16
// tokens runs its LoRA beside the base route (lora_around). quant_mma fuses the expand up to this many tokens: AWQ
// batch 4 on 4 adapters 5.148 ms per step where the GEMV's fused expand took 7.340; at 8 on 8 adapters 6.108
// against 5.742 for quant_mma + SGMV (H200). Since the unfused shrink runs beside the GEMM
// (CudaRunnerOptions::lora_beside_base), 3-4 tokens gain from it too: AWQ batch 3 / 4 on as many adapters 4.923 / 5.004
// fused (shrink launch first) against 4.821 / 4.878 (H100, two runs each); fp8 the same within 0.6 %.
inline constexpr int kQuantMmaFusedLoraTokens = 2;
// quant_mma runs the shrink itself (lora_shrink) up to this many tokens, in blocks that go first, where an sgmv_shrink
// launch would precede it: AWQ batch 1 on an adapter 4.266 -> 4.052 ms per step, batch 2 on 2 adapters 4.544 ->
// 4.466 (two runs each), fp8 batch 2 5.424 -> 5.326. From 4 tokens its shrink blocks hold SM slots the weight stream
// needs, where sgmv_shrink's small blocks sit beside it: batch 4 on 4 adapters 4.677 against 4.910 (H200).
inline constexpr int kQuantMmaFusedShrinkTokens = 2;

// Block-scaled fp8 sites take the W8A8 route from this many tokens (CudaRunner::Impl::fp8_matmul): x quantized per
// token and 128 columns, then cuBLASLt's fp8 GEMM on the fp8 tensor cores. A Qwen3-8B layer's four sites
// (quant_mma_ bench --fp8, H100, W8A8 against quant_mma / bf16 cuBLAS, x36 layers): 4 tokens 3.69 / 4.02 / 5.56 ms, 32
// tokens 3.86 / 6.51 / 5.52, 512 tokens 6.49 against dequantize + cuBLAS 16.85 and bf16 9.16, 2048 tokens 23.90 against
// bf16 34.87. Whole steps (H100, ms): batch 4 / 32 / 64 5.33 / 6.32 / 8.24 against 5.72 / 10.69 / 17.43 before (bf16
// 7.14 / 8.14 / 9.84). Two tokens stay on the GEMV (4.70 ms per step against W8A8's 5.18; with two adapters
// quant_mma's 6.18 against 6.10), one token too.
inline constexpr int kFp8GemmMinTokens = 3;

// Per-channel fp8 sites (compressed-tensors' channel strategy, and per-tensor checkpoints, whose scale is packed per
// channel: quant_pack.cpp) take W8A8 from this many tokens: x quantized per whole token (one block of threads per
// token, latency-bound with few tokens), then cuBLASLt's fp8 GEMM with outer-vector scales. A Qwen3-8B layer's four
// sites x36 against quant_mma (H100): 8 tokens 4.98 / 4.15 ms, 16 tokens 4.87 / 5.20. Whole steps, fp8-channel
// Qwen3-8B, W8A8 against the weight-only kernels: batch 8 6.735 / 6.074 ms, 32 7.301 / 10.980, 64 8.898 / 17.176.
inline constexpr int kFp8ChannelGemmMinTokens = 16;

// Whether an fp8 site takes the W8A8 route at this many tokens, before the runner asks cuBLASLt for algorithms at its
// shapes (CudaRunner::Impl::fp8_gemm_takes): block-scaled weights from kFp8GemmMinTokens, per-channel ones from
// kFp8ChannelGemmMinTokens.
constexpr bool fp8_w8a8_route(bool block_scaled, int tokens) {
    return tokens >= (block_scaled ? kFp8GemmMinTokens : kFp8ChannelGemmMinTokens);
}

// int4: quant_mma first (it beats the GEMV from 1 token: AWQ batch 1 4.05 -> 3.83 ms per step, H100), with an
// adapter too since it runs the shrink in its own launch (quant_params.h, lora_shrink): batch 1 on an adapter GPTQ
// 5.141 -> 3.904 ms per step, AWQ 4.689 -> 4.052 (H200, against the GEMV route of d2515dc). The GEMV second, for
// act-order whose g_idx does not sort into whole groups at load (quant_pack.h; GPTQ's own act-order does) at 1-4
// tokens. fp8: the GEMV first at 1 token and at 2 without adapters, quant_mma first from 3 tokens and with adapters
// from 2, where the GEMV's per-row expand and separate shrink cost more. H200, ms per step: base 1 / 2 / 3 / 4 tokens
// GEMV 3.526 / 4.183 / 5.359 / 5.385, quant_mma 4.555 / 4.624 / 4.708 / 4.725; adapters at 1 token GEMV 4.262,
// quant_mma 4.989; at 2 on 2 adapters 5.845 against 5.326, at 4 on 4 8.766 against 5.773.
// The fp8 GEMV runs the shrink in its own launch at 1 token (quant_gemv.cu, fp8_shrink_block), where an sgmv_shrink
// launch preceded it: fp8 Qwen3-8B batch 1 on a rank-16 adapter 3.800 -> 3.565 ms per step (base 3.058; H200).
// lora_around (CudaRunnerOptions::quant_lora_delta): no kernel fuses LoRA; the site takes the route of a step
// without adapters and the runner runs the adapter's shrink and expand beside it.
constexpr QuantRoute route_quant_site(bool fp8, int tokens, bool lora, bool lora_around = false) {
    if (lora_around) {
        QuantRoute r = route_quant_site(fp8, tokens, false);
        for (QuantAttempt& a : r) a.lora_around = true;
        return r;
    }
    const QuantAttempt gemv{QuantKernel::gemv, false, fp8 && lora && tokens == 1};
    const bool fuse = lora && tokens <= kQuantMmaFusedLoraTokens;
    const QuantAttempt mma{QuantKernel::mma, fuse, fuse && tokens <= kQuantMmaFusedShrinkTokens};
    if (fp8 && (tokens == 1 || (tokens == 2 && !lora))) return {gemv, mma};
    return {mma, gemv};
}

}  // namespace loradesk::runtime::cuda
