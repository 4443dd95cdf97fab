// Private state of CudaRunner shared by its translation units (setup in cuda_runner.cpp, LoRA slots in
// cuda_runner_lora.cpp, launches in cuda_forward.cpp, workspace and graphs in cuda_graphs.cpp): device arenas,
// per-layer weight pointers, streams, cuBLAS handle, staging. The step plan itself comes from step_plan.h.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "attention_plan.h"
#include "bf16_gemm.h"
#include "fp8_gemm.h"
#include "model/model_config.h"
#include "quant_mma.h"
#include "quant_params.h"
#include "runtime/cuda/cuda_runner.h"
#include "runtime/cuda/quant_route.h"
#include "runtime/cuda/step_plan.h"

namespace loradesk::runtime::cuda {

void cuda_check(cudaError_t e, const char* what);
void cublas_check(cublasStatus_t s, const char* what);

// One cudaMalloc'd block; freed on destruction.
class DeviceArena {
  public:
    DeviceArena() = default;
    ~DeviceArena();
    DeviceArena(const DeviceArena&) = delete;
    DeviceArena& operator=(const DeviceArena&) = delete;
    void allocate(std::size_t bytes, const char* what);  // throws Error(unavailable) when it does not fit
    void release();
    uint8_t* data() const { return m_ptr; }
    std::size_t bytes() const { return m_bytes; }

  private:
    uint8_t* m_ptr = nullptr;
    std::size_t m_bytes = 0;
};

// Page-locked host memory for async copies; freed on destruction.
class PinnedBuffer {
  public:
    ~PinnedBuffer();
    void reserve(std::size_t bytes);  // grows only
    uint8_t* data() const { return m_ptr; }

  private:
    uint8_t* m_ptr = nullptr;
    std::size_t m_bytes = 0;
};

// Pinned host buffers of prepared adapters that were let go, kept for the next preparation (cudaHostAlloc of
// a 100 MB buffer costs tens of ms). Shared with the prepared forms' deleters, which may outlive the runner.
struct LoraPinnedPool {
    std::mutex mutex;
    std::vector<std::pair<uint8_t*, std::size_t>> free;  // (buffer, capacity)
    ~LoraPinnedPool();
};

// A call site whose projections are quantized (cuda_weights.cpp): one part per matrix the kernels read, each
// writing output columns [out_offset, + p.n) of the site's output. Empty for a bf16 site.
struct DeviceQuantSite {
    struct Part {
        kernels::QuantGemvParams p;  // device pointers; x, y, n_tokens and workspace are set per call
        int out_offset = 0;
    };
    std::vector<Part> parts;
};

struct DeviceLayer {
    const uint16_t *in_norm = nullptr, *post_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr;
    const uint16_t *wqkv = nullptr, *bqkv = nullptr;  // [q_dim + 2 kv_dim, hidden], rows q | k | v
    const uint16_t *wo = nullptr, *bo = nullptr;      // [hidden, q_dim]
    const uint16_t *wgu = nullptr, *bgu = nullptr;    // [2 inter, hidden], rows gate | up
    const uint16_t *wd = nullptr, *bd = nullptr;      // [hidden, inter]
    DeviceQuantSite quant[4];  // per call site (0 q|k|v, 1 o, 2 gate|up, 3 down); its bf16 matrix is then null
};

struct CudaRunner::Impl {
    model::ModelConfig cfg;
    CudaRunnerOptions opts;
    int device = 0, n_sms = 0;
    std::string name;
    cudaStream_t stream = nullptr;       // compute
    cudaStream_t lora_stream = nullptr;  // slot uploads
    // Unfused LoRA shrinks, beside their site's base projection (begin_lora / end_lora): the greatest priority, so
    // that the shrink's few blocks take the first free SM slots instead of queueing behind the GEMM's. From
    // kShrinkAfterBaseTokens tokens side_stream_base instead, of the compute stream's priority.
    cudaStream_t side_stream = nullptr, side_stream_base = nullptr;
    cudaEvent_t fork_mark = nullptr, join_mark = nullptr;  // x is ready / xa is ready
    // While a graph is captured: the compute stream's capture dependencies when fork_mark was recorded (x's writer).
    // A small delta's side stream forks from exactly these rather than by waiting on fork_mark, which would add them
    // to the nodes it already depends on (the previous site's expand): chained that way through a step, the side
    // stream cost every reader of a delta its early launch (PDL), 1-2.5 us per reader (CUPTI trace, AWQ batch 1; a
    // stand-alone graph of the same shape reproduced it: docs/cuda-benchmarks.md, twenty-first session). Forks from
    // kShrinkAfterBaseTokens tokens still wait on the event: not measured the other way.
    std::vector<cudaGraphNode_t> fork_nodes;
    std::vector<cudaGraphEdgeData> fork_edges;
    void mark_fork();                   // records fork_mark, and with fork_from_snapshot the snapshot while capturing
    void fork_side(cudaStream_t side);  // side waits for x: the snapshot while capturing, else fork_mark
    // Per slot: recorded after the slot's last upload (or clear); a step waits on it only when its batch uses
    // the slot and the wait was not issued yet, so uploads for other slots never hold a step back.
    std::vector<cudaEvent_t> slot_ready;  // [n_slots + 1], [0] unused
    std::vector<bool> slot_pending;
    cudaEvent_t staging_free = nullptr;  // the f32 path's staging buffer may be refilled once this completes
    cudaEvent_t compute_mark = nullptr;  // uploads wait for steps already queued (they may read the old adapter)
    int64_t lora_waits = 0;              // steps that had to wait for a slot upload
    cublasHandle_t cublas = nullptr;

    DeviceArena weights;
    const uint16_t *embed = nullptr, *final_norm = nullptr, *lm_head = nullptr;
    std::vector<DeviceLayer> layers;
    float* inv_freq = nullptr;  // [head_dim / 2], inside the weights arena
    // Quantized checkpoints, inside the weights arena: quant_gemv's split-K workspace (zero between launches) and
    // the scratch the other steps dequantize a projection into, a slice of rows at a time, for cuBLAS.
    void* quant_workspace = nullptr;
    uint16_t* dequant_scratch = nullptr;
    int64_t dequant_scratch_elems = 0;
    // Act-order GPTQ sorted at load (QuantGemvParams::k_order): x gathered into its rows' order, [kGatherRows]
    // [gather_row_elems]; the GEMM kernels' launches of a site use [part][kQuantMmaMaxRows] slices of it.
    static constexpr int kGatherRows = 1024;
    uint16_t* gather_scratch = nullptr;
    int64_t gather_row_elems = 0;
    // fp8 sites from kFp8GemmMinTokens / kFp8ChannelGemmMinTokens tokens (quant_route.h), W8A8: x quantized per token
    // (and 128 columns for block-scaled weights), kFp8Rows tokens at a time, into fp8_xq [kFp8Rows][max_in] e4m3 and
    // fp8_x_scale [max_in / 128][kFp8Rows] f32 (in the weights arena), then cuBLASLt's fp8 GEMM per part (fp8_gemm.h),
    // on the cuBLAS workspace. fp8_xq is null without fp8 sites; fp8_gemm is unavailable before sm_90.
    static constexpr int kFp8Rows = 1024;
    kernels::Fp8Gemm fp8_gemm;
    // The bf16 projections from 3 tokens on and lm_head over 3+ rows, through cuBLASLt with algorithms timed at
    // workspace allocation (tune_bf16_gemms), on the cuBLAS workspace; cublasGemmEx where it has no algorithm.
    kernels::Bf16Gemm bf16_gemm;
    uint8_t* fp8_xq = nullptr;
    float* fp8_x_scale = nullptr;
    int64_t fp8_row_elems = 0;  // max_in

    DeviceArena kv;
    int n_pages = 0, page_size = 0;  // the arena holds one more page, scratch_page = n_pages, for graph padding
    int scratch_page = 0;
    std::size_t kv_layer_elems = 0;  // per layer, per K or V

    // LoRA: slot-major regions; within a slot, per layer, per module: A [max_rank, in] then Bt [max_rank, out].
    DeviceArena lora;
    int n_slots = 0, max_rank = 0;
    std::size_t slot_elems = 0;
    std::vector<std::size_t> module_offset;  // [n_layers * 7] offset of A inside a slot region
    PinnedBuffer lora_staging;               // f32 path: one adapter's compact bf16 values + its rank/scale column
    PinnedBuffer zero_column;                // [n_layers * 7] int32 zeros: the ranks of a cleared slot
    std::vector<bool> slot_loaded;           // [n_slots + 1]
    std::shared_ptr<LoraPinnedPool> pinned_pool = std::make_shared<LoraPinnedPool>();
    std::vector<std::shared_ptr<const PreparedLora>> slot_source;  // prepared form a slot's upload reads
    int32_t* d_ranks = nullptr;                                    // [n_layers][7][n_slots + 1], inside the lora arena
    float* d_scales = nullptr;

    // Per-step workspace, planned for ws_tokens tokens / ws_logits logits rows / ws_att_items attention items
    // (eager plans coarsen their split-K chunk to stay within it) and the cuBLAS workspace. Step metadata
    // (ids, page tables, plans) lives in its own small arena of ws_meta int32s. Both grow only for batches
    // beyond the plan, which drops the captured graphs (they hold these pointers).
    DeviceArena workspace, meta_arena;
    int ws_tokens = 0, ws_logits = 0, ws_att_items = 0, ws_meta = 0;
    void* cublas_ws = nullptr;
    std::size_t cublas_ws_bytes = 0;
    float* residual = nullptr;
    uint16_t *xn = nullptr, *qkv = nullptr, *attn = nullptr, *proj = nullptr, *gate_up = nullptr, *act = nullptr;
    uint16_t* logit_rows = nullptr;
    float *xa = nullptr, *logits = nullptr, *att_ws = nullptr;
    // A site's LoRA delta (SgmvParams::delta) for steps of kShrinkAfterBaseTokens to lora_delta_tokens tokens, f32,
    // [lora_delta_tokens][widest site output]; one site's at a time (its reader runs before the next site forks).
    float* lora_delta = nullptr;
    int lora_delta_tokens = 0;
    static constexpr int kLoraDeltaMaxTokens = 256;
    int32_t* att_counters = nullptr;  // attention_decode's fused merge (AttentionParams::merge_counters)
    void* argmax_ws = nullptr;        // greedy ids' cross-block reduction (kernels::argmax_workspace_bytes)
    int32_t *meta = nullptr, *greedy = nullptr;
    int32_t* gemv_sync = nullptr;       // [n_layers][4 LoRA sites][2]: fused-LoRA counters, zeroed at each step's start
    PinnedBuffer h_meta, h_out, h_ids;  // h_ids: forward_sampled's argmax ids
    PinnedBuffer h_masks;               // grammar masks, then their row index (forward_sampled)
    DeviceArena masks;                  // the same on the device; grows on need (never inside a graph)
    LaunchPlan launch;                  // this step's plan (step_plan.h); its meta block is what `meta` receives

    // Decode graphs, keyed by (bucket size, with LoRA, attention splits, LoRA segment cap, decode block size). They
    // bake device pointers only: weights, KV pages, LoRA slots and meta contents may change between replays.
    std::map<std::tuple<int, bool, int, int, int>, cudaGraphExec_t> graphs;
    CudaRunner::GraphStats stats;

    std::pair<int, int> module_dims(int module) const;
    void upload_weights(const std::string& model_dir);
    void plan_workspace();  // from opts, n_pages and max_rank; drops graphs
    void allocate_workspace(int n_tokens, int n_logits, int n_att_items);
    void ensure_workspace(int n_tokens, int n_logits, int n_att_items, int n_meta);  // grows (warned) if needed
    void drop_graphs();
    PlannerConfig planner_config() const;
    PlannerLimits planner_limits() const { return {ws_tokens, ws_logits, ws_att_items, ws_meta}; }
    void upload_meta();   // launch.meta -> meta, on the stream
    void replay_graph();  // launch is a graph plan: captures its graph on first use, then replays it
    void gemm(const uint16_t* w, const uint16_t* x, int n, int in, int out, void* y, int64_t ldy, bool f32_out);
    void tune_bf16_gemms();
    void run_layers(const StepMeta& sm);
    void run_attention(const StepMeta& sm, const kernels::AttentionParams& ap, const kernels::RopeKvParams& rp);
    // Whether run_attention hands the RoPE + KV write to attention_decode_rope (which may fuse it).
    bool attention_takes_rope(const StepMeta& sm, const kernels::AttentionParams& ap) const;
    kernels::SgmvParams lora_params(const StepMeta& sm, int layer, int first_module, int n_modules, const uint16_t* x,
                                    int64_t x_stride) const;
    // LoRA of a site that no kernel fused, in two halves around the site's base projection: begin_lora launches the
    // shrink (on side_stream once x is ready, when opts.lora_beside_base), end_lora the expand into y once both the
    // base output and xa are ready. Callers use them only when step_has_lora. From kShrinkAfterBaseTokens tokens
    // begin_lora only marks x ready, and end_lora enqueues the shrink (still waiting for x only, so beside the base)
    // on side_stream_base before it waits for it: with many tokens the shrink has hundreds of blocks (384 for
    // Qwen3-8B q|k|v at 32 tokens), and enqueued first at the greatest priority they took every SM while cuBLAS's
    // blocks, which need a whole SM's registers, waited for them to drain (CUPTI trace of batch 32 on 32 adapters:
    // the q|k|v GEMM began 6 us after its shrink, 1 us before the shrink ended). H200, Qwen3-8B 32 requests on 32
    // rank-16 adapters: 7.922 -> 7.661 ms per step, 79.3 -> 82.0 % of base (6.28). 16: not measured below 32.
    // From kShrinkAfterBaseTokens to lora_delta_tokens tokens (allow_delta: the reader of y can take a delta) the
    // expand follows the shrink on side_stream_base too, into lora_delta instead of y, and end_lora returns it for the
    // kernel that reads y next to add (RoPE + KV write, the residual norms): the expand then runs beside the
    // base projection instead of after it, and its launch floor (~5 us, CUPTI) leaves the compute stream. H200,
    // Qwen3-8B 32 on 32 rank-16 adapters: 7.41-7.45 against 7.58-7.67 ms per step (84.1-84.8 % of base, from
    // 81.2-82.1 %); 64 on 64 -0.1 to -2 %, 16 on 16 -1 %. Otherwise end_lora returns null. gate|up takes no delta:
    // its GEMM holds 128 of the 132 SMs, so the expand ran after it anyway, and silu_mul after that; end_lora runs
    // sgmv_expand_swiglu instead, which writes the activation in one launch (32 on 32 7.121 -> 6.917 ms per step,
    // 64 on 64 9.422 -> 9.198, H200).
    // Below kShrinkAfterBaseTokens the expand goes into the delta only where small_delta is set (a quantized site with
    // CudaRunnerOptions::quant_lora_delta): shrink and expand are then enqueued after the base kernel, as from
    // kShrinkAfterBaseTokens, forked from x's writer itself (fork_side). gate|up takes that delta too (silu_mul adds
    // it), and q|k|v even where the decode attention fuses the RoPE (it adds it). H200, AWQ Qwen3-8B batch 1 on a
    // rank-16 adapter: 3.197 / 3.186 ms per step (base 3.113); at the greatest priority before the base kernel 3.47
    // (its blocks took slots the base kernel's first wave needed); chained (event forks) 3.29.
    // The stream they go on depends on the base kernel (after_quant_gemv): behind quant_mma's one wave, or
    // cuBLASLt's W8A8, side_stream_base; behind the quant GEMV, whose fp8 blocks (9 per SM at 56 registers) fill the
    // register file in several waves, side_stream, so that they take the first slots those blocks free instead of
    // waiting for the grid's tail. H200, Qwen3-8B on rank-16 adapters, ms per step, side_stream against
    // side_stream_base in the same call: fp8 batch 1 3.175 / 3.178 against 3.228 / 3.220 (base 3.057 / 3.059), batch 2
    // 3.832 / 3.840 against 3.868 / 3.866; on every site, AWQ batch 1 3.498 against 3.190, GPTQ 3.325 against 3.060,
    // fp8 batch 8 (W8A8) 4.818 against 4.748.
    static constexpr int kShrinkAfterBaseTokens = 16;
    bool step_has_lora(const StepMeta& sm) const { return sm.any_lora && n_slots > 0; }
    kernels::SgmvParams begin_lora(const StepMeta& sm, int layer, int first_module, int n_modules, const uint16_t* x,
                                   int64_t x_stride, uint16_t* y, int64_t y_stride, bool allow_delta,
                                   bool small_delta = false);
    // swiglu_act (a gate|up site, no delta): the expand applies the SwiGLU into it (sgmv_expand_swiglu), y unwritten.
    // after_quant_gemv: the base kernel just launched is the quant GEMV (see above).
    const float* end_lora(const kernels::SgmvParams& p, uint16_t* swiglu_act = nullptr, bool after_quant_gemv = false);
    void launch_side_shrink(const kernels::SgmvParams& p, cudaStream_t side);
    bool shrink_after_base = false;  // begin_lora deferred the shrink to end_lora
    // fork_side sets the side stream's capture dependencies to fork_nodes (a small delta's fork).
    bool fork_from_snapshot = false;
    // One projection y = x W^T (+ bias) (+ LoRA of modules [first_module, +n_modules)) (SwiGLU when swiglu: y is
    // then the activation, inter wide): the skinny GEMM with everything fused for small batches, else cuBLAS
    // followed by bias_add, SGMV and silu_mul. site: the layer's LoRA call site (0 qkv, 1 o, 2 gate/up, 3 down).
    // Returns the LoRA delta that the reader of y must still add (end_lora), or null; never with swiglu, nor without
    // allow_delta (the reader cannot take one).
    const float* projection(const StepMeta& sm, int layer, int site, const uint16_t* w, const uint16_t* bias,
                            const uint16_t* x, int64_t x_stride, int in, int out, uint16_t* y, int64_t y_stride,
                            int first_module, int n_modules, bool swiglu, bool allow_delta);
    // A quantized site through the kernel of attempt a (quant_route.h), per part and per pass of its most tokens
    // (quant_gemv 4, quant_mma 32), bias in the epilogue. quant_gemv takes 1-4 tokens and always adds the LoRA expand;
    // quant_mma up to kQuantMmaMaxRows (fp8: 32): each launch streams the packed weights once (at 64 tokens the two
    // passes measured 13.99 ms per Qwen3-8B AWQ step against 18.34 for dequantize + cuBLAS, H100), and it adds the
    // expand with a.fuse_lora. The shrink is either in the first launch's own blocks (a.fuse_shrink: quant_mma's one
    // pass, the fp8 GEMV at 1 token; counters at sync) or an sgmv_shrink launch first, which quant_mma's first launch
    // overlaps with its weight streaming (x_before_wait). Without a fused expand the caller applies LoRA around it
    // (begin_lora / end_lora). plan_quant_site fills `out` and says whether the kernel takes the shapes (no unsorted
    // act-order g_idx for quant_mma, not 5+ tokens for quant_gemv, no odd widths); launch_quant_site then issues it, an
    // act-order matrix sorted at load (k_order) after x is gathered into its row order.
    static constexpr int kQuantMmaMaxRows = 64;
    static_assert(3 * kQuantMmaMaxRows <= kGatherRows);
    struct QuantLaunches {
        static constexpr int kPasses =
            (kQuantMmaMaxRows + kernels::kQuantMmaMaxTokens - 1) / kernels::kQuantMmaMaxTokens;
        std::array<kernels::QuantGemvParams, 3 * kPasses> p;  // a site has at most q|k|v parts
        std::size_t n = 0;
        bool gemv = false, fuses_lora = false;
        bool shrink_first = false;  // an sgmv_shrink launch of `lora` precedes them
        kernels::SgmvParams lora;
        struct Gather {  // act-order parts: x's columns in the part's row order, before everything else
            const int32_t* order = nullptr;
            int cols = 0;
            uint16_t* out = nullptr;
        };
        std::array<Gather, 3> gathers;
        std::size_t n_gathers = 0;
        const uint16_t* x = nullptr;  // what the gathers read
        int64_t x_stride = 0;
        int n_tokens = 0;
    };
    bool plan_quant_site(const StepMeta& sm, int layer, const DeviceQuantSite& site, const uint16_t* bias,
                         const uint16_t* x, int64_t x_stride, uint16_t* y, int64_t y_stride, int first_module,
                         int n_modules, const QuantAttempt& a, int32_t* sync, QuantLaunches& out) const;
    void launch_quant_site(const QuantLaunches& q);
    // Whether the site runs on the fp8 GEMM at n tokens (asks cuBLASLt for its algorithms, kept per shape), and that
    // GEMM: y[:, 0 .. site width) = x W^T with x quantized (fp8_quantize_rows), kFp8Rows tokens at a time (bias and
    // LoRA follow as separate launches). y needs fp8_gemm_rows(n) rows (the per-step buffers are planned so).
    bool fp8_gemm_takes(const DeviceQuantSite& site, int n, int64_t x_stride, uint16_t* y, int64_t y_stride);
    kernels::Fp8GemmParams fp8_params(const DeviceQuantSite::Part& part, int tokens, uint16_t* y,
                                      int64_t y_stride) const;
    void fp8_matmul(const DeviceQuantSite& site, const uint16_t* x, int64_t x_stride, int n, uint16_t* y,
                    int64_t y_stride);
    // y[:, 0 .. site width) = x W^T for a quantized site otherwise: each part dequantized a slice of rows at a
    // time into dequant_scratch and multiplied by cuBLAS (bias and LoRA follow as separate launches).
    void quant_matmul(const DeviceQuantSite& site, const uint16_t* x, int64_t x_stride, int n, uint16_t* y,
                      int64_t y_stride);
    // The skinny GEMM beats cuBLAS at 1-2 tokens on Qwen3-8B shapes and loses from 4 on (gemv_bench, H100:
    // x reuse across tokens through L1 does not keep up), so larger batches go to cuBLAS.
    static constexpr int kSkinnyMaxTokens = 2;
    bool use_gemv(int n_tokens) const { return opts.skinny_gemm && n_tokens <= kSkinnyMaxTokens; }
    // The fused-shrink counters of a layer's call site (gemv, quant_mma's lora_shrink), and whether a step of n
    // tokens with adapters may use them, so that run_layers zeroes them first.
    int32_t* site_sync(int layer, int site) const {
        return gemv_sync + (std::size_t(layer) * 4 + std::size_t(site)) * 2;
    }
    bool uses_site_sync(int n_tokens) const;
    void run_step(const ForwardBatch& b);  // leaves logits in `logits` on the device
    void wait_for_step();                  // synchronizes the stream, counted in stats.sync_wait_seconds
    void run_eager_step(const ForwardBatch& b);
    void check_slots(const ForwardBatch& b) const;  // throws unless every slot the batch uses holds an adapter

    // LoRA slot uploads (cuda_runner_lora.cpp).
    void validate_lora(const LoraWeights& w) const;
    // Makes `stream` wait for the uploads of the slots the batch uses that it has not waited for yet.
    void wait_for_lora_slots(const ForwardBatch& b);
    void begin_slot_upload(int slot);  // retires the slot's previous source; orders after queued steps
    void upload_column(int slot, const int32_t* ranks, const float* scales);
    void end_slot_upload(int slot, std::shared_ptr<const PreparedLora> source);
};

}  // namespace loradesk::runtime::cuda
