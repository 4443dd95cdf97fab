// CudaRunner forward pass, launch only. step_plan.h plans the step (KV slots, LoRA segments, attention work
// items) into one int32 block that a single async copy moves to the device; then the stream runs, per layer:
// add+RMSNorm, fused QKV GEMM (+bias, +SGMV LoRA over q|k|v), q/k norm+RoPE+KV write, paged attention (those two
// in one launch in decode steps up to batch 16 at Qwen3-8B shapes), o GEMM (+LoRA), add+RMSNorm, fused gate|up
// GEMM (+LoRA), SiLU*mul, down GEMM (+LoRA); finally the norm of the logits rows only and the lm_head GEMM in f32.
// A LoRA shrink that no kernel fuses runs on a side stream beside its site's base GEMM, and from 16 tokens its expand
// too, into a delta that the kernel reading the site's output adds (cuda_runner_impl.h). Decode steps replay graphs
// (cuda_graphs.cpp) when their plan says so; the workspace they all use is planned there too.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "launchers.h"
#include "quant_dequant.h"
#include "quant_gemv.h"
#include "quant_mma.h"
#include "runtime/cuda/cuda_runner_impl.h"
#include "runtime/cuda/quant_route.h"

namespace loradesk::runtime::cuda {

namespace {

void launch_check(cudaError_t e, const char* what) { cuda_check(e, what); }

}  // namespace

void CudaRunner::Impl::gemm(const uint16_t* w, const uint16_t* x, int n, int in, int out, void* y, int64_t ldy,
                            bool f32_out) {
    if (n == 0) return;
    if (bf16_gemm.available()) {
        const cudaError_t e = bf16_gemm.run({w, x, y, in, ldy, n, out, in, f32_out}, stream);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotSupported && e != cudaErrorInvalidValue) launch_check(e, "bf16 GEMM (cuBLASLt)");
    }
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major Y[n, out] = X[n, in] W[out, in]^T is column-major Y^T = W^T(op T on W's col-major view) X^T.
    cublas_check(
        cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &alpha, w, CUDA_R_16BF, in, x, CUDA_R_16BF, in,
                     &beta, y, f32_out ? CUDA_R_32F : CUDA_R_16BF, int(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

// Token counts whose projections get a timed algorithm: every count up to the next one takes the same choice where
// cuBLASLt accepts it (the decode graphs' buckets and small batches); from 257 tokens (prefill chunks) cuBLASLt's
// first offer. Up to 128 tokens the projections stream their weights whatever the count, so one choice serves a
// range; above, each decode bucket (step_plan.h) gets its own.
constexpr int kTunedGemmTokens[] = {4, 8, 16, 32, 64, 128, 160, 192, 224, 256};

// Times the bf16 call sites' algorithms over every layer's weights (bf16_gemm.h) and lm_head's, once per shape and
// token count that fits the workspace: 50 shapes in about 1.05 s at load for Llama-7B on the H200.
void CudaRunner::Impl::tune_bf16_gemms() {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (layers.empty() || cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone)
        return;
    const int hid = cfg.hidden_size, qd = cfg.q_dim(), inter = cfg.intermediate_size, qkv_dim = qd + 2 * cfg.kv_dim();
    struct Site {
        const uint16_t* DeviceLayer::*w;
        const uint16_t* x;
        void* y;
        int k, n;
    };
    const Site sites[] = {{&DeviceLayer::wqkv, xn, qkv, hid, qkv_dim},
                          {&DeviceLayer::wo, attn, proj, qd, hid},
                          {&DeviceLayer::wgu, xn, gate_up, hid, 2 * inter},
                          {&DeviceLayer::wd, act, proj, inter, hid}};
    const auto t0 = std::chrono::steady_clock::now();
    int shapes = 0;
    auto tune = [&](const kernels::Bf16GemmParams& p, const std::vector<const uint16_t*>& weights) {
        if (bf16_gemm.tuned(p)) return;
        const cudaError_t e = bf16_gemm.tune(p, weights.data(), int(weights.size()), stream);
        if (e != cudaSuccess && e != cudaErrorNotSupported && e != cudaErrorInvalidValue)
            launch_check(e, "timing the bf16 GEMM algorithms");
        shapes += e == cudaSuccess;
    };
    for (const Site& site : sites) {
        std::vector<const uint16_t*> weights;
        for (const DeviceLayer& layer : layers)
            if (layer.*site.w) weights.push_back(layer.*site.w);
        if (weights.size() != layers.size()) continue;  // a quantized site
        for (int t : kTunedGemmTokens)
            if (t <= ws_tokens) tune({nullptr, site.x, site.y, site.k, site.n, t, site.n, site.k, false}, weights);
    }
    for (int t : kTunedGemmTokens)
        if (t <= ws_logits)
            tune({nullptr, logit_rows, logits, hid, cfg.vocab_size, t, cfg.vocab_size, hid, true}, {lm_head});
    if (shapes > 0)
        log::info("CUDA runner: timed cuBLASLt's algorithms for {} bf16 GEMM shapes in {:.0f} ms", shapes,
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

void CudaRunner::Impl::check_slots(const ForwardBatch& b) const {
    for (int s = 0; s < b.n_seqs(); ++s) {
        int slot = b.seq_lora_slot.empty() ? 0 : b.seq_lora_slot[std::size_t(s)];
        if (slot < 0 || slot > n_slots || (slot > 0 && !slot_loaded[std::size_t(slot)]))
            throw_error(ErrorCode::internal,
                        fmt::format("sequence {} uses LoRA slot {} which holds no adapter", s, slot));
    }
}

PlannerConfig CudaRunner::Impl::planner_config() const {
    PlannerConfig pc;
    pc.page_size = page_size, pc.n_heads = cfg.n_heads, pc.n_kv_heads = cfg.n_kv_heads, pc.n_sms = n_sms;
    pc.scratch_page = scratch_page;
    pc.prefill_kernel = kernels::attention_prefill_supported(cfg.head_dim);
    kernels::AttentionParams probe;
    probe.n_heads = cfg.n_heads, probe.n_kv_heads = cfg.n_kv_heads, probe.head_dim = cfg.head_dim;
    probe.page_size = page_size, probe.k_pages = probe.v_pages = reinterpret_cast<const uint16_t*>(kv.data());
    pc.decode_kernel = kernels::attention_decode_supported(probe);
    return pc;
}

void CudaRunner::Impl::upload_meta() {
    const std::size_t bytes = launch.meta.size() * sizeof(int32_t);
    std::memcpy(h_meta.data(), launch.meta.data(), bytes);
    cuda_check(cudaMemcpyAsync(meta, h_meta.data(), bytes, cudaMemcpyHostToDevice, stream), "step upload");
}

// Plan, then launch only: a decode step that a graph can take replays one, anything else runs eagerly.
void CudaRunner::Impl::run_step(const ForwardBatch& b) {
    if (n_pages == 0) throw_error(ErrorCode::internal, "CudaRunner::forward before allocate_kv");
    if (b.page_size != page_size)
        throw_error(ErrorCode::internal,
                    fmt::format("batch page_size {} differs from the pool's {}", b.page_size, page_size));
    b.validate(n_pages, cfg.vocab_size);
    check_slots(b);
    wait_for_lora_slots(b);  // uploads of the slots this step uses land before it (eager or replayed) reads them
    if (opts.cuda_graphs && plan_graph_step(b, planner_config(), planner_limits(), launch)) {
        upload_meta();
        replay_graph();
        ++stats.replays;
        return;
    }
    ++stats.eager_steps;
    run_eager_step(b);
}

void CudaRunner::Impl::run_eager_step(const ForwardBatch& b) {
    plan_eager_step(b, planner_config(), planner_limits(), launch);
    const StepShape& sh = launch.shape;
    ensure_workspace(sh.n, sh.n_logits, sh.n_items, int(launch.meta.size()));
    upload_meta();
    run_layers(bind_step_meta(launch, meta));
}

// SGMV over up to three adjacent modules that share the input (q|k|v, gate|up) and whose outputs are
// adjacent column ranges of y.
kernels::SgmvParams CudaRunner::Impl::lora_params(const StepMeta& sm, int layer, int first_module, int n_modules,
                                                  const uint16_t* x, int64_t x_stride) const {
    kernels::SgmvParams p;
    p.x = x, p.x_row_stride = x_stride, p.in_features = module_dims(first_module).first;
    p.xa = xa, p.seg_indptr = sm.seg_indptr, p.seg_slot = sm.seg_slot, p.n_segs = sm.n_segs;
    p.max_seg_len = sm.max_seg_len, p.max_rank = max_rank, p.slot_stride = int64_t(slot_elems), p.n_slices = n_modules;
    const auto* base = reinterpret_cast<const uint16_t*>(lora.data());
    int offset = 0;
    for (int j = 0; j < n_modules; ++j) {
        int mi = first_module + j;
        auto [in, out] = module_dims(mi);
        std::size_t t = std::size_t(layer) * kNumLoraModules + mi;
        const uint16_t* a = base + module_offset[t];
        p.slices[j] = {
            a, a + std::size_t(max_rank) * in, d_ranks + t * (n_slots + 1), d_scales + t * (n_slots + 1), offset, out};
        offset += out;
    }
    return p;
}

kernels::SgmvParams CudaRunner::Impl::begin_lora(const StepMeta& sm, int layer, int first_module, int n_modules,
                                                 const uint16_t* x, int64_t x_stride, uint16_t* y, int64_t y_stride,
                                                 bool allow_delta, bool small_delta) {
    kernels::SgmvParams p = lora_params(sm, layer, first_module, n_modules, x, x_stride);
    p.y = y, p.y_row_stride = y_stride;
    if (!opts.lora_beside_base) {
        launch_check(kernels::sgmv_shrink(p, stream), "sgmv_shrink");
        return p;
    }
    // x was written by the stream's last launch. The site's previous expand is already ordered before this fork on
    // the stream, so the shrink may overwrite xa. Inside a graph capture the events become edges.
    const bool many = sm.n >= kShrinkAfterBaseTokens;
    if (allow_delta && (many || small_delta) && sm.n <= lora_delta_tokens) p.delta = lora_delta;
    // A small delta's shrink and expand are enqueued after the base kernel too (end_lora), forked from x's writer
    // itself.
    fork_from_snapshot = !many && p.delta;
    shrink_after_base = many || p.delta;
    mark_fork();
    if (!shrink_after_base) launch_side_shrink(p, side_stream);
    return p;
}

void CudaRunner::Impl::mark_fork() {
    cuda_check(cudaEventRecord(fork_mark, stream), "cudaEventRecord");
    fork_nodes.clear(), fork_edges.clear();
    if (!fork_from_snapshot) return;  // fork_side waits on the event
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t* nodes = nullptr;
    const cudaGraphEdgeData* edges = nullptr;
    std::size_t n = 0;
    cuda_check(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &nodes, &edges, &n), "capture info");
    if (status != cudaStreamCaptureStatusActive) return;
    fork_nodes.assign(nodes, nodes + n);
    fork_edges = edges ? std::vector<cudaGraphEdgeData>(edges, edges + n) : std::vector<cudaGraphEdgeData>(n);
}

void CudaRunner::Impl::fork_side(cudaStream_t side) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cuda_check(cudaStreamIsCapturing(side, &status), "cudaStreamIsCapturing");
    // A side stream not yet in the capture joins it through the event (its first fork of the step).
    if (!fork_from_snapshot || status != cudaStreamCaptureStatusActive || fork_nodes.empty()) {
        cuda_check(cudaStreamWaitEvent(side, fork_mark, 0), "cudaStreamWaitEvent");
        return;
    }
    cuda_check(cudaStreamUpdateCaptureDependencies(side, fork_nodes.data(), fork_edges.data(), fork_nodes.size(),
                                                   cudaStreamSetCaptureDependencies),
               "cudaStreamUpdateCaptureDependencies");
}

// The shrink on `side` once x is ready (fork_mark), with p.delta the expand into it after the shrink, and join_mark
// once they are done.
void CudaRunner::Impl::launch_side_shrink(const kernels::SgmvParams& p, cudaStream_t side) {
    fork_side(side);
    launch_check(kernels::sgmv_shrink(p, side), "sgmv_shrink");
    if (p.delta) launch_check(kernels::sgmv_expand(p, side), "sgmv_expand");
    cuda_check(cudaEventRecord(join_mark, side), "cudaEventRecord");
}

const float* CudaRunner::Impl::end_lora(const kernels::SgmvParams& p, uint16_t* swiglu_act, bool after_quant_gemv) {
    if (opts.lora_beside_base) {
        // fork_mark: still x, not the base output
        if (shrink_after_base)
            launch_side_shrink(p, fork_from_snapshot && after_quant_gemv ? side_stream : side_stream_base);
        cuda_check(cudaStreamWaitEvent(stream, join_mark, 0), "cudaStreamWaitEvent");
    }
    if (p.delta) return p.delta;
    if (swiglu_act)
        launch_check(kernels::sgmv_expand_swiglu(p, swiglu_act, stream), "sgmv_expand_swiglu");
    else
        launch_check(kernels::sgmv_expand(p, stream), "sgmv_expand");
    return nullptr;
}

void CudaRunner::Impl::quant_matmul(const DeviceQuantSite& site, const uint16_t* x, int64_t x_stride, int n,
                                    uint16_t* y, int64_t y_stride) {
    for (const DeviceQuantSite::Part& part : site.parts) {
        kernels::QuantGemvParams p = part.p;
        // A matrix sorted by group at load dequantizes in its sorted order and multiplies x gathered to match, up to
        // kGatherRows tokens at a time (each slice of weights is dequantized once).
        const int32_t* order = std::exchange(p.k_order, nullptr);
        // Slices of whole 8-row packs (int4 packs 8 columns per word) that fit the scratch.
        const int rows = int(std::min<int64_t>(p.n, dequant_scratch_elems / p.k / 8 * 8));
        for (int r = 0; r < p.n; r += rows) {
            const int len = std::min(rows, p.n - r);
            launch_check(kernels::quant_dequantize(p, r, len, dequant_scratch, stream), "quant_dequantize");
            for (int t0 = 0; t0 < n; t0 += order ? kGatherRows : n) {
                const int tokens = order ? std::min(kGatherRows, n - t0) : n;
                if (order)
                    launch_check(kernels::gather_columns(x + t0 * x_stride, x_stride, order, tokens, p.k,
                                                         gather_scratch, stream),
                                 "gather_columns");
                gemm(dequant_scratch, order ? gather_scratch : x, tokens, p.k, len,
                     y + t0 * y_stride + part.out_offset + r, y_stride, false);
            }
        }
    }
}

kernels::Fp8GemmParams CudaRunner::Impl::fp8_params(const DeviceQuantSite::Part& part, int tokens, uint16_t* y,
                                                    int64_t y_stride) const {
    kernels::Fp8GemmParams g;
    g.w_scaling = part.p.fp8_scaling, g.w = part.p.w_fp8, g.w_scale = part.p.w_scale;
    g.xq = fp8_xq, g.x_scale = fp8_x_scale, g.y = y + part.out_offset, g.y_row_stride = y_stride;
    g.n_tokens = tokens, g.n = part.p.n, g.k = part.p.k;
    return g;
}

bool CudaRunner::Impl::fp8_gemm_takes(const DeviceQuantSite& site, int n, int64_t x_stride, uint16_t* y,
                                      int64_t y_stride) {
    if (!opts.fp8_w8a8 || !fp8_xq || !fp8_gemm.available() || x_stride % 4 || site.parts.empty()) return false;
    // One quantization of x serves every part: they must share the weights' scaling (they do, from one checkpoint).
    const kernels::Fp8Scaling scaling = site.parts.front().p.fp8_scaling;
    if (!fp8_w8a8_route(scaling == kernels::Fp8Scaling::block128, n)) return false;
    for (const DeviceQuantSite::Part& part : site.parts) {
        const kernels::QuantGemvParams& q = part.p;
        if (q.format != kernels::QuantFormat::fp8_e4m3 || q.fp8_scaling != scaling || q.k > fp8_row_elems) return false;
        // The passes fp8_matmul makes: whole kFp8Rows chunks and the rest (cuBLASLt may lack an algorithm for one).
        for (int tokens : {std::min(n, kFp8Rows), n % kFp8Rows})
            if (tokens > 0 && !fp8_gemm.takes(fp8_params(part, tokens, y, y_stride))) return false;
    }
    return true;
}

void CudaRunner::Impl::fp8_matmul(const DeviceQuantSite& site, const uint16_t* x, int64_t x_stride, int n, uint16_t* y,
                                  int64_t y_stride) {
    const kernels::QuantGemvParams& first = site.parts.front().p;
    const int k = first.k, block_cols = kernels::fp8_act_block_cols(first.fp8_scaling, k);
    for (int t0 = 0; t0 < n; t0 += kFp8Rows) {
        const int tokens = std::min(kFp8Rows, n - t0);
        launch_check(kernels::fp8_quantize_rows(x + t0 * x_stride, x_stride, tokens, k, fp8_xq, fp8_x_scale,
                                                kernels::fp8_act_scale_ld(tokens), block_cols, stream),
                     "fp8_quantize_rows");
        for (const DeviceQuantSite::Part& part : site.parts)
            launch_check(fp8_gemm.run(fp8_params(part, tokens, y + t0 * y_stride, y_stride), stream),
                         "fp8 GEMM (cuBLASLt)");
    }
}

bool CudaRunner::Impl::plan_quant_site(const StepMeta& sm, int layer, const DeviceQuantSite& site, const uint16_t* bias,
                                       const uint16_t* x, int64_t x_stride, uint16_t* y, int64_t y_stride,
                                       int first_module, int n_modules, const QuantAttempt& a, int32_t* sync,
                                       QuantLaunches& out) const {
    const int n = sm.n;
    const bool gemv = a.kernel == QuantKernel::gemv;
    const bool fp8 = !site.parts.empty() && site.parts.front().p.format == kernels::QuantFormat::fp8_e4m3;
    // fp8 reads twice int4's bytes: two quant_mma passes at 33-64 tokens measured slower than dequantize + cuBLAS.
    if (n > (gemv ? kernels::kQuantGemvMaxTokens : fp8 ? kernels::kQuantMmaMaxTokens : kQuantMmaMaxRows)) return false;
    const int pass = gemv ? kernels::kQuantGemvMaxTokens : kernels::kQuantMmaMaxTokens;
    // One pass when LoRA is fused: quant_mma takes LoRA up to kQuantMmaMaxLoraTokens tokens per launch, and the
    // shrink in the launch needs one counter pair.
    static_assert(kQuantMmaFusedLoraTokens <= kernels::kQuantMmaMaxLoraTokens);
    // Act-order parts sorted at load read x gathered into their row order; the shrink in the launch would read that
    // x against A rows in the checkpoint's order, so it runs as its own launch there.
    out = QuantLaunches{};
    out.x = x, out.x_stride = x_stride, out.n_tokens = n;
    for (std::size_t i = 0; i < site.parts.size(); ++i)
        if (const kernels::QuantGemvParams& p = site.parts[i].p; p.k_order) {
            if (out.n_gathers == out.gathers.size() || n > kQuantMmaMaxRows || p.k > gather_row_elems) return false;
            out.gathers[out.n_gathers++] = {p.k_order, p.k, gather_scratch + i * kQuantMmaMaxRows * gather_row_elems};
        }
    const bool fuse_lora = a.fuses_lora() && step_has_lora(sm);
    const bool fuse_shrink = fuse_lora && a.fuse_shrink && out.n_gathers == 0;
    out.gemv = gemv, out.fuses_lora = a.fuses_lora(), out.shrink_first = fuse_lora && !fuse_shrink;
    if (fuse_lora) out.lora = lora_params(sm, layer, first_module, n_modules, x, x_stride);
    for (std::size_t i = 0; i < site.parts.size(); ++i)
        for (int t0 = 0; t0 < n; t0 += pass) {
            const DeviceQuantSite::Part& part = site.parts[i];
            kernels::QuantGemvParams p = part.p;
            p.x = x + t0 * x_stride, p.x_row_stride = x_stride;
            if (p.k_order) {  // a plain GPTQ matrix over the gathered x
                p.x = gather_scratch + i * kQuantMmaMaxRows * gather_row_elems + t0 * p.k, p.x_row_stride = p.k;
                p.k_order = nullptr;
            }
            p.y = y + t0 * y_stride + part.out_offset, p.y_row_stride = y_stride;
            p.n_tokens = std::min(n - t0, pass), p.workspace = quant_workspace;
            p.bias = bias ? bias + part.out_offset : nullptr;
            p.lora_expand = fuse_lora, p.lora = out.lora, p.lora_col = part.out_offset, p.lora_token0 = t0;
            // The first launch runs the shrink, or follows the shrink's launch and may read x before its wait.
            p.lora_shrink = fuse_shrink && out.n == 0, p.lora_sync = sync;
            p.x_before_wait = !gemv && out.shrink_first && out.n == 0;
            const bool takes = gemv ? kernels::quant_gemv_supported(p) : kernels::quant_mma_supported(p);
            if (!takes || out.n == out.p.size()) return false;
            out.p[out.n++] = p;
        }
    return true;
}

// The shrink writes xa first; each launch adds bias and the expand to its outputs before rounding them once.
void CudaRunner::Impl::launch_quant_site(const QuantLaunches& q) {
    for (std::size_t i = 0; i < q.n_gathers; ++i)
        launch_check(kernels::gather_columns(q.x, q.x_stride, q.gathers[i].order, q.n_tokens, q.gathers[i].cols,
                                             q.gathers[i].out, stream),
                     "gather_columns");
    if (q.shrink_first) launch_check(kernels::sgmv_shrink(q.lora, stream), "sgmv_shrink");
    for (std::size_t i = 0; i < q.n; ++i)
        launch_check(q.gemv ? kernels::quant_gemv(q.p[i], stream) : kernels::quant_mma(q.p[i], stream),
                     q.gemv ? "quant_gemv" : "quant_mma");
}

const float* CudaRunner::Impl::projection(const StepMeta& sm, int layer, int site, const uint16_t* w,
                                          const uint16_t* bias, const uint16_t* x, int64_t x_stride, int in, int out,
                                          uint16_t* y, int64_t y_stride, int first_module, int n_modules, bool swiglu,
                                          bool allow_delta) {
    const int n = sm.n;
    const DeviceQuantSite& quant = layers[std::size_t(layer)].quant[site];
    const bool lora = step_has_lora(sm);
    if (!quant.parts.empty()) {
        // The kernels route_quant_site picks, in order, until one takes the shapes; else dequantize + cuBLAS. LoRA
        // goes around the base launches where no kernel fuses it.
        const bool fp8 = quant.parts.front().p.format == kernels::QuantFormat::fp8_e4m3;
        const bool w8a8 = fp8 && fp8_gemm_takes(quant, n, x_stride, y, y_stride);
        // LoRA beside the base kernels into a delta (CudaRunnerOptions::quant_lora_delta); gate|up's too, which
        // silu_mul adds, where from kShrinkAfterBaseTokens sgmv_expand_swiglu writes the activation instead.
        const bool small_delta = lora && opts.quant_lora_delta && n < kShrinkAfterBaseTokens;
        QuantLaunches q;
        bool planned = false;
        if (!w8a8)
            for (const QuantAttempt& a : route_quant_site(fp8, n, lora, small_delta))
                if ((planned = plan_quant_site(sm, layer, quant, bias, x, x_stride, y, y_stride, first_module,
                                               n_modules, a, site_sync(layer, site), q)))
                    break;
        const bool lora_around = lora && !(planned && q.fuses_lora);
        kernels::SgmvParams lp;
        if (lora_around)
            lp = begin_lora(sm, layer, first_module, n_modules, x, x_stride, y, y_stride,
                            allow_delta && (!swiglu || small_delta), small_delta);
        if (planned) {
            launch_quant_site(q);  // bias in the kernels' epilogue
        } else {
            if (w8a8)
                fp8_matmul(quant, x, x_stride, n, y, y_stride);
            else
                quant_matmul(quant, x, x_stride, n, y, y_stride);
            if (bias) launch_check(kernels::bias_add(y, y_stride, bias, n, out, stream), "bias_add");
        }
        const float* delta = lora_around ? end_lora(lp, swiglu ? act : nullptr, planned && q.gemv) : nullptr;
        if (!swiglu) return delta;
        if (!lora_around || delta) launch_check(kernels::silu_mul(y, delta, n, out / 2, act, stream), "silu_mul");
        return nullptr;
    }
    if (use_gemv(n)) {
        kernels::GemvParams g;
        g.w = w, g.x = x, g.x_row_stride = x_stride, g.n_tokens = n, g.in = in, g.out_rows = out, g.bias = bias;
        g.swiglu = swiglu, g.y = swiglu ? static_cast<void*>(act) : static_cast<void*>(y);
        g.y_row_stride = swiglu ? out / 2 : y_stride;
        g.lora = lora;
        if (g.lora) g.sgmv = lora_params(sm, layer, first_module, n_modules, x, x_stride);
        g.sync = site_sync(layer, site);
        if (kernels::gemv_supported(g)) {
            launch_check(kernels::gemv(g, stream), "gemv");
            return nullptr;
        }
    }
    kernels::SgmvParams lp;
    if (lora) lp = begin_lora(sm, layer, first_module, n_modules, x, x_stride, y, y_stride, allow_delta && !swiglu);
    gemm(w, x, n, in, out, y, y_stride, false);
    if (bias) launch_check(kernels::bias_add(y, y_stride, bias, n, out, stream), "bias_add");
    const float* delta = lora ? end_lora(lp, swiglu ? act : nullptr) : nullptr;
    if (!swiglu) return delta;
    if (!lora) launch_check(kernels::silu_mul(y, nullptr, n, out / 2, act, stream), "silu_mul");
    return nullptr;
}

// q/k norm + RoPE + KV write, then prefill tiles on the tensor-core kernel, the rest on the split-K kernels (the
// decode-specialised one when every split sequence has a single query token); they write disjoint rows of the
// output. A pure decode step hands the RoPE to attention_decode_rope, which fuses it where it can (one launch fewer
// per layer up to batch 16 at Qwen3-8B shapes).
bool CudaRunner::Impl::attention_takes_rope(const StepMeta& sm, const kernels::AttentionParams& ap) const {
    return sm.split_decode_only && sm.n_tiles == 0 && sm.n_items > 0 && kernels::attention_decode_supported(ap);
}

void CudaRunner::Impl::run_attention(const StepMeta& sm, const kernels::AttentionParams& ap,
                                     const kernels::RopeKvParams& rp) {
    const bool decode = sm.split_decode_only && kernels::attention_decode_supported(ap);
    if (attention_takes_rope(sm, ap)) {
        launch_check(
            kernels::attention_decode_rope(ap, rp, sm.items, sm.n_items, sm.groups, sm.n_groups, att_ws, stream),
            "attention_decode_rope");
        return;
    }
    launch_check(kernels::rope_kv_write(rp, stream), "rope_kv_write");
    if (sm.n_tiles > 0) launch_check(kernels::attention_prefill(ap, sm.tiles, sm.n_tiles, stream), "attention_prefill");
    if (sm.n_items == 0) return;
    if (decode)
        launch_check(kernels::attention_decode(ap, sm.items, sm.n_items, sm.groups, sm.n_groups, att_ws, stream),
                     "attention_decode");
    else
        launch_check(kernels::attention(ap, sm.items, sm.n_items, sm.groups, sm.n_groups, att_ws, stream), "attention");
}

bool CudaRunner::Impl::uses_site_sync(int n_tokens) const {
    const bool quantized = !layers.empty() && !layers.front().quant[0].parts.empty();
    return use_gemv(n_tokens) || (quantized && n_tokens <= kQuantMmaFusedShrinkTokens && !opts.quant_lora_delta);
}

void CudaRunner::Impl::run_layers(const StepMeta& sm) {
    const int n = sm.n, hid = cfg.hidden_size, qd = cfg.q_dim(), kvd = cfg.kv_dim(), inter = cfg.intermediate_size;
    const int qkv_dim = qd + 2 * kvd;
    const float eps = cfg.rms_norm_eps;
    if (step_has_lora(sm) && uses_site_sync(n))  // the fused-shrink counters of every call site start at zero
        cuda_check(cudaMemsetAsync(gemv_sync, 0, std::size_t(cfg.n_layers) * 4 * 2 * sizeof(int32_t), stream),
                   "gemv counters");
    launch_check(kernels::embedding_gather(embed, sm.token_ids, n, hid, cfg.vocab_size, residual, stream), "embedding");
    const float* down_delta = nullptr;  // the previous layer's down projection's LoRA delta, when pending
    bool rope_fused = false;            // the decode attention fuses q|k|v's RoPE + KV write (layer 0 asks)
    for (int l = 0; l < cfg.n_layers; ++l) {
        const DeviceLayer& w = layers[std::size_t(l)];
        launch_check(kernels::add_rmsnorm(l == 0 ? nullptr : proj, down_delta, residual, w.in_norm, nullptr, n, hid,
                                          eps, xn, stream),
                     "add_rmsnorm");
        auto* k_pages = reinterpret_cast<uint16_t*>(kv.data()) + std::size_t(l) * 2 * kv_layer_elems;
        kernels::RopeKvParams rp;
        rp.qkv = qkv, rp.qkv_row_stride = qkv_dim, rp.n_tokens = n, rp.n_heads = cfg.n_heads,
        rp.n_kv_heads = cfg.n_kv_heads;
        rp.head_dim = cfg.head_dim, rp.positions = sm.positions, rp.kv_slots = sm.kv_slots, rp.inv_freq = inv_freq;
        rp.q_norm = w.q_norm, rp.k_norm = w.k_norm, rp.norm_eps = eps, rp.k_pages = k_pages;
        rp.v_pages = k_pages + kv_layer_elems;

        kernels::AttentionParams ap;
        ap.q = qkv, ap.q_row_stride = qkv_dim, ap.k_pages = rp.k_pages, ap.v_pages = rp.v_pages;
        ap.qo_indptr = sm.qo_indptr, ap.kv_indptr = sm.kv_indptr, ap.kv_indices = sm.kv_indices;
        ap.kv_last_page_len = sm.last_len, ap.n_seqs = sm.n_seqs, ap.page_size = page_size, ap.n_heads = cfg.n_heads;
        ap.n_kv_heads = cfg.n_kv_heads, ap.head_dim = cfg.head_dim, ap.scale = 1.0f / std::sqrt(float(cfg.head_dim));
        ap.out = attn, ap.merge_counters = att_counters, ap.max_kv_len = sm.max_kv;

        // Where the decode attention fuses the RoPE, steps of kShrinkAfterBaseTokens or more keep the q|k|v expand
        // after the projection, as measured before that kernel took a delta (17th session); below, only
        // quant_lora_delta makes a delta, and the fused kernel adds it. Every layer has the same shapes: asked once.
        if (l == 0)
            rope_fused = step_has_lora(sm) && attention_takes_rope(sm, ap) &&
                         kernels::attention_decode_rope_fuses(ap, rp, sm.n_items, sm.n_groups);
        rp.qkv_delta = projection(sm, l, 0, w.wqkv, w.bqkv, xn, hid, hid, qkv_dim, qkv, qkv_dim, int(LoraModule::q), 3,
                                  false, !rope_fused || n < kShrinkAfterBaseTokens);
        run_attention(sm, ap, rp);

        const float* o_delta =
            projection(sm, l, 1, w.wo, w.bo, attn, qd, qd, hid, proj, hid, int(LoraModule::o), 1, false, true);

        launch_check(kernels::add_rmsnorm(proj, o_delta, residual, w.post_norm, nullptr, n, hid, eps, xn, stream),
                     "add_rmsnorm");
        projection(sm, l, 2, w.wgu, w.bgu, xn, hid, hid, 2 * inter, gate_up, 2 * inter, int(LoraModule::gate), 2, true,
                   true);
        down_delta =
            projection(sm, l, 3, w.wd, w.bd, act, inter, inter, hid, proj, hid, int(LoraModule::down), 1, false, true);
    }
    // Only the rows that need logits get the last residual add, the final norm and lm_head.
    launch_check(kernels::add_rmsnorm(cfg.n_layers > 0 ? proj : nullptr, down_delta, residual, final_norm,
                                      sm.logits_idx, sm.n_logits, hid, eps, logit_rows, stream),
                 "final norm");
    if (use_gemv(sm.n_logits)) {
        kernels::GemvParams g;
        g.w = lm_head, g.x = logit_rows, g.x_row_stride = hid, g.n_tokens = sm.n_logits, g.in = hid;
        g.out_rows = cfg.vocab_size, g.y = logits, g.y_row_stride = cfg.vocab_size, g.f32_out = true;
        if (kernels::gemv_supported(g)) {
            launch_check(kernels::gemv(g, stream), "lm_head gemv");
            return;
        }
    }
    gemm(lm_head, logit_rows, sm.n_logits, hid, cfg.vocab_size, logits, cfg.vocab_size, true);
}

void CudaRunner::Impl::wait_for_step() {
    const auto t0 = std::chrono::steady_clock::now();
    cuda_check(cudaStreamSynchronize(stream), "forward");
    stats.sync_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CudaRunner::set_cuda_graphs(bool on) { m->opts.cuda_graphs = on; }
CudaRunner::GraphStats CudaRunner::graph_stats() const { return m->stats; }

void CudaRunner::forward(const ForwardBatch& batch, std::vector<float>& out) {
    m->run_step(batch);
    const std::size_t count = batch.logits_indices.size() * std::size_t(m->cfg.vocab_size);
    cuda_check(cudaMemcpyAsync(m->h_out.data(), m->logits, count * 4, cudaMemcpyDeviceToHost, m->stream),
               "logits download");
    m->wait_for_step();
    out.resize(count);
    std::memcpy(out.data(), m->h_out.data(), count * 4);
}

void CudaRunner::forward_sampled(const ForwardBatch& batch, std::span<const uint8_t> want_logits,
                                 std::vector<int32_t>& argmax, std::vector<float>& logits, const RowMasks& masks) {
    m->run_step(batch);
    const int n = int(batch.logits_indices.size());
    const std::size_t vocab = std::size_t(m->cfg.vocab_size), row_bytes = vocab * 4;
    // The step is queued: the host now finishes the grammar masks (computed while the GPU runs), and they go up
    // in one copy behind the step, the row index after them.
    if (masks.ready) masks.ready();
    if (!masks.row_mask.empty()) {
        const std::size_t mask_bytes = masks.words.size() * 4, index_bytes = std::size_t(n) * 4;
        m->h_masks.reserve(mask_bytes + index_bytes);
        if (m->masks.bytes() < mask_bytes + index_bytes) {
            cuda_check(cudaStreamSynchronize(m->stream), "mask buffer");
            m->masks.release();
            m->masks.allocate(std::max<std::size_t>(mask_bytes + index_bytes, std::size_t(1) << 20), "grammar masks");
        }
        std::memcpy(m->h_masks.data(), masks.words.data(), mask_bytes);
        std::memcpy(m->h_masks.data() + mask_bytes, masks.row_mask.data(),
                    std::min(index_bytes, masks.row_mask.size() * 4));
        cuda_check(cudaMemcpyAsync(m->masks.data(), m->h_masks.data(), mask_bytes + index_bytes, cudaMemcpyHostToDevice,
                                   m->stream),
                   "mask upload");
        launch_check(
            kernels::masked_argmax(m->logits, n, m->cfg.vocab_size, reinterpret_cast<const uint32_t*>(m->masks.data()),
                                   reinterpret_cast<const int32_t*>(m->masks.data() + mask_bytes), masks.words_per_row,
                                   m->greedy, m->argmax_ws, m->stream),
            "masked argmax");
    } else {
        launch_check(kernels::argmax(m->logits, n, m->cfg.vocab_size, m->greedy, m->argmax_ws, m->stream), "argmax");
    }
    std::size_t n_rows = 0;
    uint8_t* host = reinterpret_cast<uint8_t*>(m->h_out.data());
    for (int r = 0; r < n; ++r) {
        if (std::size_t(r) >= want_logits.size() || !want_logits[std::size_t(r)]) continue;
        // Adjacent wanted rows merge into one copy.
        std::size_t first = std::size_t(r);
        while (r + 1 < n && std::size_t(r + 1) < want_logits.size() && want_logits[std::size_t(r + 1)]) ++r;
        const std::size_t count = std::size_t(r) + 1 - first;
        cuda_check(cudaMemcpyAsync(host + n_rows * row_bytes, m->logits + first * vocab, count * row_bytes,
                                   cudaMemcpyDeviceToHost, m->stream),
                   "logits download");
        n_rows += count;
    }
    argmax.resize(std::size_t(n));
    cuda_check(cudaMemcpyAsync(m->h_ids.data(), m->greedy, std::size_t(n) * 4, cudaMemcpyDeviceToHost, m->stream),
               "token download");
    m->wait_for_step();
    std::memcpy(argmax.data(), m->h_ids.data(), std::size_t(n) * 4);
    logits.resize(n_rows * vocab);
    if (n_rows) std::memcpy(logits.data(), host, n_rows * row_bytes);
}

void CudaRunner::forward_greedy(const ForwardBatch& batch, std::vector<int32_t>& tokens) {
    std::vector<float> no_rows;
    forward_sampled(batch, {}, tokens, no_rows);  // every row greedy: only the ids come back
}

}  // namespace loradesk::runtime::cuda
