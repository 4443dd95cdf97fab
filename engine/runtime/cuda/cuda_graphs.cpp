// CudaRunner memory plan and decode graphs. The workspace is planned once from CudaRunnerOptions (tokens,
// logits rows, attention partials, cuBLAS workspace) so that no step allocates; decode steps that the planner
// (step_plan.h) padded to a bucket of sequences replay a CUDA graph captured for (bucket, LoRA or not,
// attention splits, LoRA segment cap). A graph bakes device pointers only, so KV contents, LoRA slot reloads
// and the per-step meta are all seen by later replays.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "launchers.h"
#include "runtime/cuda/cuda_runner_impl.h"

namespace loradesk::runtime::cuda {

namespace {

constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;

std::size_t align_up(std::size_t v) { return (v + 255) & ~std::size_t(255); }

}  // namespace

void CudaRunner::Impl::drop_graphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
}

void CudaRunner::Impl::allocate_workspace(int n_tokens, int n_logits, int n_items) {
    drop_graphs();
    ws_tokens = n_tokens, ws_logits = n_logits, ws_att_items = n_items;
    // Rows for ws_tokens tokens and the padding rows the block-scaled fp8 GEMM writes past them (fp8_gemm_rows).
    const std::size_t T = std::size_t(kernels::fp8_gemm_rows(ws_tokens)), H = std::size_t(cfg.hidden_size);
    const std::size_t qkv_dim = std::size_t(cfg.q_dim() + 2 * cfg.kv_dim()), inter = std::size_t(cfg.intermediate_size);
    // Self-resetting device counters: zeroed once here, left zero by the kernels that use them.
    const std::size_t counter_bytes = kernels::attention_decode_counters(std::size_t(ws_att_items), cfg.n_kv_heads) * 4;
    const std::size_t argmax_bytes = kernels::argmax_workspace_bytes(ws_logits);
    lora_delta_tokens = std::min(ws_tokens, kLoraDeltaMaxTokens);
    const std::size_t delta_width = std::max({qkv_dim, H, 2 * inter});
    const std::size_t sizes[] = {
        T * H * 4,                                         // residual (f32)
        T * H * 2,                                         // xn
        T * qkv_dim * 2,                                   // qkv
        T * std::size_t(cfg.q_dim()) * 2,                  // attn
        T * H * 2,                                         // proj
        T * inter * 4,                                     // gate_up (2 x inter bf16)
        T * inter * 2,                                     // act
        T * 3 * std::size_t(std::max(max_rank, 64)) * 4,   // xa: slots configured later up to rank 64 fit
        std::size_t(lora_delta_tokens) * delta_width * 4,  // lora_delta
        std::size_t(ws_logits) * H * 2,                    // logit rows
        std::size_t(ws_logits) * cfg.vocab_size * 4,       // logits
        kernels::attention_workspace_bytes(std::size_t(ws_att_items), cfg.n_kv_heads, cfg.head_dim),
        counter_bytes,                          // attention merge counters: groups <= items
        std::size_t(ws_logits) * 4,             // greedy ids
        argmax_bytes,                           // their reduction
        std::size_t(cfg.n_layers) * 4 * 2 * 4,  // gemv LoRA handshakes
        kCublasWorkspace,
    };
    std::size_t total = 0;
    for (std::size_t s : sizes) total += align_up(s);
    workspace.allocate(total, "the forward workspace");
    uint8_t* p = workspace.data();
    std::size_t i = 0;
    auto take = [&]() {
        uint8_t* r = p;
        p += align_up(sizes[i++]);
        return r;
    };
    residual = reinterpret_cast<float*>(take());
    xn = reinterpret_cast<uint16_t*>(take());
    qkv = reinterpret_cast<uint16_t*>(take());
    attn = reinterpret_cast<uint16_t*>(take());
    proj = reinterpret_cast<uint16_t*>(take());
    gate_up = reinterpret_cast<uint16_t*>(take());
    act = reinterpret_cast<uint16_t*>(take());
    xa = reinterpret_cast<float*>(take());
    lora_delta = reinterpret_cast<float*>(take());
    logit_rows = reinterpret_cast<uint16_t*>(take());
    logits = reinterpret_cast<float*>(take());
    att_ws = reinterpret_cast<float*>(take());
    att_counters = reinterpret_cast<int32_t*>(take());
    cuda_check(cudaMemset(att_counters, 0, counter_bytes), "cudaMemset");
    greedy = reinterpret_cast<int32_t*>(take());
    argmax_ws = take();
    cuda_check(cudaMemset(argmax_ws, 0, argmax_bytes), "cudaMemset");
    gemv_sync = reinterpret_cast<int32_t*>(take());
    cuda_check(cudaMemset(gemv_sync, 0, std::size_t(cfg.n_layers) * 4 * 2 * 4), "cudaMemset");  // and by steps using it
    cublas_ws = take();
    cublas_ws_bytes = kCublasWorkspace;
    // A fixed cuBLAS workspace: stream capture must not allocate, and eager steps then use the same one.
    cublas_check(cublasSetWorkspace(cublas, cublas_ws, cublas_ws_bytes), "cublasSetWorkspace");
    // cuBLASLt's fp8 GEMM runs on the same stream, never beside cuBLAS: it shares the workspace.
    if (fp8_xq && !fp8_gemm.init(cublas_ws, cublas_ws_bytes))
        log::info(
            "CUDA runner: no fp8 GEMM on this GPU (cuBLASLt has the scalings from sm_90); fp8 batches and "
            "prefill take the weight-only kernels");
    if (bf16_gemm.init(cublas_ws, cublas_ws_bytes)) tune_bf16_gemms();
    h_out.reserve(std::size_t(ws_logits) * cfg.vocab_size * 4);
    h_ids.reserve(std::size_t(ws_logits) * 4);
}

void CudaRunner::Impl::plan_workspace() {
    if (stream) cuda_check(cudaStreamSynchronize(stream), "workspace plan");
    const int tokens = std::max(opts.max_batch_tokens, 1), rows = std::max(opts.max_logits, 1);
    const int group = cfg.n_heads / cfg.n_kv_heads,
              tiles_per_token = (group + kernels::kAttentionTileRows - 1) / kernels::kAttentionTileRows;
    allocate_workspace(tokens, rows, kPlannedAttentionItems);
    // Meta: per-token arrays, per-sequence arrays (a sequence has >= 1 token), plan structs, page tables.
    const std::size_t groups = std::size_t(tokens) * tiles_per_token + std::size_t(tokens);
    const std::size_t kv = 2 * std::size_t(n_pages + 1) + 2 * std::size_t(tokens);
    const std::size_t ints = 16 * std::size_t(tokens) + 64 + kItemInts * std::size_t(ws_att_items) + 4 * groups + kv;
    ws_meta = int(ints);
    meta_arena.allocate(ints * 4, "the step metadata");
    meta = reinterpret_cast<int32_t*>(meta_arena.data());
    h_meta.reserve(ints * 4);
}

void CudaRunner::Impl::ensure_workspace(int n_tokens, int n_logits, int n_items, int n_meta) {
    if (n_tokens > ws_tokens || n_logits > ws_logits || n_items > ws_att_items) {
        cuda_check(cudaStreamSynchronize(stream), "workspace resize");
        log::warn(
            "CUDA runner: a batch of {} tokens / {} logits rows / {} attention items exceeds the planned "
            "workspace ({} / {} / {}); growing it (raise CudaRunnerOptions to avoid this)",
            n_tokens, n_logits, n_items, ws_tokens, ws_logits, ws_att_items);
        ++stats.workspace_grows;
        allocate_workspace(std::max(n_tokens, ws_tokens), std::max(n_logits, ws_logits),
                           std::max(n_items, ws_att_items));
    }
    if (n_meta > ws_meta) {
        cuda_check(cudaStreamSynchronize(stream), "metadata resize");
        drop_graphs();
        ++stats.workspace_grows;
        ws_meta = n_meta + n_meta / 2;
        meta_arena.allocate(std::size_t(ws_meta) * 4, "the step metadata");
        meta = reinterpret_cast<int32_t*>(meta_arena.data());
        h_meta.reserve(std::size_t(ws_meta) * 4);
    }
}

// The plan (plan_graph_step) fixed the bucket, the splits, the segment cap and the decode block size, so the graph's
// grids and the meta offsets it bakes depend on the key alone; the meta contents were uploaded just before.
void CudaRunner::Impl::replay_graph() {
    const auto key =
        std::make_tuple(launch.bucket, launch.shape.any_lora, launch.splits, launch.seg_cap, launch.decode_warps);
    auto it = graphs.find(key);
    if (it == graphs.end()) {
        const StepMeta sm = bind_step_meta(launch, meta);
        cudaGraph_t graph = nullptr;
        cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        try {
            run_layers(sm);
        } catch (...) {
            cudaStreamEndCapture(stream, &graph);
            if (graph) cudaGraphDestroy(graph);
            throw;
        }
        cuda_check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        cudaGraphExec_t exec = nullptr;
        // Node priorities: LoRA shrinks captured from side_stream keep its priority inside the graph.
        cudaError_t e = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
        cudaGraphDestroy(graph);
        cuda_check(e, "cudaGraphInstantiate");
        it = graphs.emplace(key, exec).first;
        ++stats.captures;
    }
    cuda_check(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
}

double measure_copy_bandwidth_gbps(int device) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    const std::size_t bytes = std::size_t(1) << 30;
    DeviceArena a, b;
    a.allocate(bytes, "the bandwidth probe");
    b.allocate(bytes, "the bandwidth probe");
    cuda_check(cudaMemset(a.data(), 1, bytes), "cudaMemset");
    cudaEvent_t t0, t1;
    cuda_check(cudaEventCreate(&t0), "cudaEventCreate");
    cuda_check(cudaEventCreate(&t1), "cudaEventCreate");
    float best_ms = 1e30f;
    for (int i = 0; i < 6; ++i) {  // the first is a warm-up; the best of the rest
        cudaEventRecord(t0);
        cudaMemcpy(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice);
        cudaEventRecord(t1);
        cuda_check(cudaEventSynchronize(t1), "bandwidth probe");
        float ms = 0;
        cudaEventElapsedTime(&ms, t0, t1);
        if (i > 0) best_ms = std::min(best_ms, ms);
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return 2.0 * double(bytes) / (double(best_ms) * 1e-3) / 1e9;
}

}  // namespace loradesk::runtime::cuda
