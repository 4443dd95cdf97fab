// CudaRunner: the GPU ModelRunner. bf16 weights (f16/f32 checkpoints converted at load), cuBLAS GEMMs with
// f32 accumulation for every projection and lm_head, kernels/ for the rest, paged bf16 KV, SGMV LoRA over
// device slots. Device memory (weights, KV pool, LoRA slots, workspace sized from CudaRunnerOptions) is
// allocated up front and reported by memory(); decode steps replay CUDA graphs captured per batch-size
// bucket (base-only and with-LoRA variants). CUDA types stay behind the pimpl. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model_runner.h"

namespace loradesk::runtime::cuda {

// True when a CUDA driver and at least one GPU are usable (for --device auto).
bool cuda_device_available();

// Copy bandwidth of the device (device-to-device cudaMemcpy of 1 GiB, read + write bytes counted), in GB/s:
// the memory roofline that benchmarks print beside their figures.
double measure_copy_bandwidth_gbps(int device = 0);

struct CudaRunnerOptions {
    // The forward workspace is planned for batches up to these sizes; a larger batch still runs but first
    // grows the workspace (a synchronising reallocation, logged as a warning, that drops captured graphs).
    int max_batch_tokens = 4096;
    int max_logits = 256;
    // Decode steps (one token per sequence, every sequence sampled) of up to 256 sequences replay CUDA
    // graphs captured per batch bucket; off runs every step eagerly (same kernels, launched one by one).
    bool cuda_graphs = true;
    // Batches of up to 8 tokens run their projections through loradesk's skinny GEMM (kernels/gemv.cu: bias,
    // SwiGLU and LoRA fused, one launch per projection) instead of cuBLAS + separate kernels; off is the
    // cuBLAS path for every batch size (kept for comparison in benchmarks).
    bool skinny_gemm = true;
    // Programmatic dependent launch: each kernel may start while its predecessor drains (process-wide switch
    // of kernels/, set when a runner is created).
    bool programmatic_launch = true;
    // A LoRA site that no kernel fuses (cuBLAS, the dequantize path, quant_mma from 5 tokens) runs its shrink on a
    // second, high-priority stream beside the site's base projection (both only read x); the expand follows both.
    // Off runs shrink, base and expand one after another on one stream (kept for comparison in benchmarks). Qwen3-8B,
    // rank-16 adapters, one per request, ms per step (H100): AWQ batch 8 5.720 -> 5.145, batch 32 9.718 -> 8.721;
    // bf16 batch 4 8.336 -> 8.068, batch 8 8.582 -> 8.288, batch 32 10.03 -> 9.88.
    bool lora_beside_base = true;
    // On a quantized base, steps of fewer than 16 tokens run a LoRA site's shrink and expand on a side stream beside
    // the base kernel, into an f32 delta that the kernel reading the site's output adds (the RoPE-fused decode
    // attention, the residual norms, silu_mul); at 1-2 tokens the site then takes the base route (quant_route.h)
    // instead of fusing shrink and expand into quant_mma or the fp8 GEMV. Off is that fused route (kept for comparison
    // in benchmarks). With lora_beside_base off the same kernels run one after another on one stream (the expand into
    // the site's output), the order whose arithmetic the delta reproduces bit for bit. Qwen3-8B, rank-16 adapters, one
    // per request, ms per step (H200; base beside it): AWQ batch 1 3.412 -> 3.186-3.197 (base 3.113), batch 2 3.821 ->
    // 3.281-3.295 (3.164), batch 8 4.151 -> 3.927-3.940 (3.568); block-scaled fp8 batch 1 3.650 -> 3.215-3.232 (3.060),
    // and 3.170 / 3.174 (3.058) since the fp8 GEMV's side kernels run at the greatest priority (end_lora).
    bool quant_lora_delta = true;
    // fp8 checkpoints on the fp8 tensor cores (W8A8), as vLLM, SGLang and transformers' FineGrainedFP8 run them:
    // block-scaled ones (Qwen3-FP8, DeepSeek) from kFp8GemmMinTokens tokens with x rounded to e4m3 per token and 128
    // columns, per-channel and per-tensor ones from kFp8ChannelGemmMinTokens with x rounded per token
    // (quant_route.h, kernels/fp8_gemm.h). Qwen3-8B batch 32 6.32 ms per step against 10.69 weight-only (H100). Off
    // keeps x in bf16 everywhere (the weight-only kernels), for comparison and for bit-level agreement with the CPU
    // runner's numerics.
    bool fp8_w8a8 = true;
};

class CudaRunner final : public ModelRunner {
  public:
    // Loads model_dir onto GPU `device`. Throws Error(unavailable) without a driver/GPU or when the
    // weights do not fit, Error(corrupt_file/unsupported) for a bad checkpoint.
    explicit CudaRunner(const std::string& model_dir, int device = 0, CudaRunnerOptions options = {});
    ~CudaRunner() override;

    const model::ModelConfig& config() const override;
    std::string device_name() const override;
    MemoryReport memory() const override;
    std::optional<DeviceMemory> device_memory() const override;

    std::size_t kv_page_bytes(int page_size) const override;
    void allocate_kv(int n_pages, int page_size) override;

    void configure_lora_slots(int n_slots, int max_rank) override;
    void load_lora_slot(int slot, const LoraWeights& weights) override;
    void clear_lora_slot(int slot) override;
    // bf16 A and B^T rows in a pinned buffer (reused from released adapters when one fits); loader threads.
    std::shared_ptr<const PreparedLora> prepare_lora(const LoraWeights& weights) const override;
    // Issues the copies on the LoRA stream and records the slot's event; no conversion, no wait.
    void load_prepared_lora_slot(int slot, std::shared_ptr<const PreparedLora> prepared) override;
    // True once every slot upload issued so far has landed on the device; never blocks. Benchmarks poll it
    // from another thread while the loop thread keeps stepping (it only queries events).
    bool lora_uploads_done() const;
    // True while the slot's last upload (or clear) has not landed on the device; never blocks.
    bool lora_slot_uploading(int slot) const;
    // Steps so far that made the compute stream wait for a slot upload: a step waits only for the slots its
    // batch uses, once per upload.
    int64_t lora_upload_waits() const;

    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
    // Argmax of every row on the device; only the flagged rows' logits are copied back.
    void forward_sampled(const ForwardBatch& batch, std::span<const uint8_t> want_logits, std::vector<int32_t>& argmax,
                         std::vector<float>& logits, const RowMasks& masks = {}) override;

    // Greedy path: runs the step and returns argmax token ids of the logits rows (argmax on the device,
    // only n_logits ints copied back).
    void forward_greedy(const ForwardBatch& batch, std::vector<int32_t>& tokens);

    // Turns graph replay on or off for later steps (captured graphs are kept).
    void set_cuda_graphs(bool on);
    struct GraphStats {
        int64_t captures = 0;  // graphs captured (one per bucket x LoRA variant x attention split count)
        int64_t replays = 0;   // steps that ran as a graph replay
        int64_t eager_steps = 0;
        int64_t workspace_grows = 0;  // batches beyond the planned workspace
        // Time forward calls spent blocked on the stream, waiting for the GPU: a caller's step time minus this is
        // host time (loradeskd bench reports it per decode step).
        double sync_wait_seconds = 0;
    };
    GraphStats graph_stats() const;

    struct Impl;

  private:
    std::unique_ptr<Impl> m;
};

}  // namespace loradesk::runtime::cuda
