// CudaRunner memory plan and decode graphs. The workspace is planned once from CudaRunnerOptions (tokens,
// logits rows, attention partials, cuBLAS workspace) so that no step allocates; decode steps are padded to a
// bucket of sequences and replay a CUDA graph captured for (bucket, LoRA or not, attention splits). Pad rows
// attend to and write one scratch KV page past the pool, use no adapter, and their logits are never read.
// A graph bakes device pointers only, so KV contents, LoRA slot reloads and the per-step meta are all
// seen by later replays.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "launchers.h"
#include "runtime/cuda/cuda_runner_impl.h"

namespace loradesk::runtime::cuda {

namespace {

constexpr int kBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
constexpr int kMinAttItems = 4096;  // split-K partials planned for (about 66 KB each at 8 KV heads x 128)
constexpr int kMaxSplits = 64;
constexpr int kKeysPerSplit = 256;        // long contexts get more splits so that no block walks them alone
constexpr int kWholeSequenceKeys = 1024;  // up to this context, one block per sequence and KV head (no split)
constexpr int kSegTokens = 4;             // graph LoRA segments are cut to this many tokens (one SGMV block row)
constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;

std::size_t align_up(std::size_t v) { return (v + 255) & ~std::size_t(255); }

int pow2_at_least(int v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

}  // namespace

void CudaRunner::Impl::drop_graphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
}

void CudaRunner::Impl::allocate_workspace(int n_tokens, int n_logits, int n_items) {
    drop_graphs();
    ws_tokens = n_tokens, ws_logits = n_logits, ws_att_items = n_items;
    const std::size_t T = std::size_t(ws_tokens), H = std::size_t(cfg.hidden_size);
    const std::size_t qkv_dim = std::size_t(cfg.q_dim() + 2 * cfg.kv_dim()), inter = std::size_t(cfg.intermediate_size);
    const std::size_t sizes[] = {
        T * H * 4,                                        // residual (f32)
        T * H * 2,                                        // xn
        T * qkv_dim * 2,                                  // qkv
        T * std::size_t(cfg.q_dim()) * 2,                 // attn
        T * H * 2,                                        // proj
        T * inter * 4,                                    // gate_up (2 x inter bf16)
        T * inter * 2,                                    // act
        T * 3 * std::size_t(std::max(max_rank, 64)) * 4,  // xa: slots configured later up to rank 64 fit
        std::size_t(ws_logits) * H * 2,                   // logit rows
        std::size_t(ws_logits) * cfg.vocab_size * 4,      // logits
        kernels::attention_workspace_bytes(std::size_t(ws_att_items), cfg.n_kv_heads, cfg.head_dim),
        std::size_t(ws_logits) * 4,             // greedy ids
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
    logit_rows = reinterpret_cast<uint16_t*>(take());
    logits = reinterpret_cast<float*>(take());
    att_ws = reinterpret_cast<float*>(take());
    greedy = reinterpret_cast<int32_t*>(take());
    gemv_sync = reinterpret_cast<int32_t*>(take());
    cuda_check(cudaMemset(gemv_sync, 0, std::size_t(cfg.n_layers) * 4 * 2 * 4), "cudaMemset");  // then self-resetting
    cublas_ws = take();
    cublas_ws_bytes = kCublasWorkspace;
    // A fixed cuBLAS workspace: stream capture must not allocate, and eager steps then use the same one.
    cublas_check(cublasSetWorkspace(cublas, cublas_ws, cublas_ws_bytes), "cublasSetWorkspace");
    h_out.reserve(std::size_t(ws_logits) * cfg.vocab_size * 4);
    h_ids.reserve(std::size_t(ws_logits) * 4);
}

void CudaRunner::Impl::plan_workspace() {
    if (stream) cuda_check(cudaStreamSynchronize(stream), "workspace plan");
    const int tokens = std::max(opts.max_batch_tokens, 1), rows = std::max(opts.max_logits, 1);
    const int group = cfg.n_heads / cfg.n_kv_heads,
              tiles_per_token = (group + kernels::kAttentionTileRows - 1) / kernels::kAttentionTileRows;
    allocate_workspace(tokens, rows, kMinAttItems);
    // Meta: per-token arrays, per-sequence arrays (a sequence has >= 1 token), plan structs, page tables.
    const std::size_t groups = std::size_t(tokens) * tiles_per_token + std::size_t(tokens);
    const std::size_t kv = 2 * std::size_t(n_pages + 1) + 2 * std::size_t(tokens);
    const std::size_t ints = 16 * std::size_t(tokens) + 64 + 4 * (std::size_t(ws_att_items) + groups) + kv;
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

// Decode steps only: one token per sequence and a logits row for each, in order. Returns false (the caller
// runs the step eagerly) for anything else or for a batch beyond the planned buckets.
bool CudaRunner::Impl::run_graph_step(const ForwardBatch& b) {
    const int n = b.n_tokens();
    if (n == 0 || n != b.n_seqs() || int(b.logits_indices.size()) != n) return false;
    for (int i = 0; i < n; ++i)
        if (b.logits_indices[std::size_t(i)] != i) return false;
    int B = 0;
    for (int k : kBuckets)
        if (k >= n && k <= ws_tokens && k <= ws_logits) {
            B = k;
            break;
        }
    if (B == 0) return false;
    bool any_lora = false;
    check_slots(b, any_lora);

    // Attention splits: enough blocks for about two waves, more for long contexts, within the workspace.
    const int group = cfg.n_heads / cfg.n_kv_heads;
    const int tiles = (group + kernels::kAttentionTileRows - 1) / kernels::kAttentionTileRows;
    int max_kv = 1;
    for (int s = 0; s < n; ++s) max_kv = std::max(max_kv, b.kv_len(s));
    // Splits: about one per kKeysPerSplit keys (like the eager chunking), and up to 8 more when the batch
    // alone would leave most SMs idle; each split costs a partial that the merge must read back.
    const int fill = pow2_at_least((n_sms + B * tiles * cfg.n_kv_heads - 1) / (B * tiles * cfg.n_kv_heads));
    const int per_keys = pow2_at_least((max_kv + kKeysPerSplit - 1) / kKeysPerSplit);
    int splits =
        std::min(std::max(per_keys, std::min(fill, std::min(8, pow2_at_least((max_kv + 63) / 64)))), kMaxSplits);
    // Up to kWholeSequenceKeys keys the decode kernel walks a sequence in one 8-warp block and writes the output
    // itself: at batch 1 the split-K partials and the merge launch cost more than the parallelism buys.
    kernels::AttentionParams probe;
    probe.n_heads = cfg.n_heads, probe.n_kv_heads = cfg.n_kv_heads, probe.head_dim = cfg.head_dim;
    probe.page_size = page_size, probe.k_pages = probe.v_pages = reinterpret_cast<const uint16_t*>(kv.data());
    if (max_kv <= kWholeSequenceKeys && kernels::attention_decode_supported(probe)) splits = 1;
    while (splits > 1 && B * tiles * splits > ws_att_items) splits /= 2;
    if (B * tiles * splits > ws_att_items) return false;

    // Fixed layout for (B, splits): only kv_indices (last) varies in length.
    const int n_items = B * tiles * splits, n_groups = B * tiles;
    const std::size_t o_tok = 0, o_pos = B, o_slot = 2 * B, o_qo = 3 * B, o_kvp = 4 * B + 1, o_last = 5 * B + 2,
                      o_seg = 6 * B + 2, o_segslot = 7 * B + 3, o_logits = 8 * B + 3;
    const std::size_t o_items = (9 * std::size_t(B) + 3 + 3) / 4 * 4, o_groups = o_items + 4 * std::size_t(n_items),
                      o_kv = o_groups + 4 * std::size_t(n_groups);
    const std::size_t total = o_kv + b.kv_indices.size() + std::size_t(B - n);
    if (total > std::size_t(ws_meta)) return false;  // page tables beyond the plan: eager grows the metadata

    auto& h = meta_host;
    h.assign(o_kv, 0);
    std::copy(b.token_ids.begin(), b.token_ids.end(), h.begin() + o_tok);
    std::copy(b.positions.begin(), b.positions.end(), h.begin() + o_pos);
    for (int s = 0; s < B; ++s) {
        h[o_qo + s + 1] = s + 1;
        h[o_logits + s] = s;
        if (s < n) {
            const int pos = b.kv_len(s) - 1;
            h[o_slot + s] = b.kv_indices[std::size_t(b.kv_indptr[s] + pos / page_size)] * page_size + pos % page_size;
            h[o_kvp + s + 1] = b.kv_indptr[s + 1];
            h[o_last + s] = b.kv_last_page_len[std::size_t(s)];
        } else {  // pad: token 0 at position 0 in the scratch page
            h[o_slot + s] = scratch_page * page_size;
            h[o_kvp + s + 1] = h[o_kvp + s] + 1;
            h[o_last + s] = 1;
        }
    }
    // LoRA segments cut to kSegTokens tokens, so that the SGMV grid (B segments x 1 block row) is fixed;
    // unused segments are empty and use slot 0 (their blocks return at once).
    // When no two neighbours share an adapter every segment is one token, and the SGMV kernels have a
    // one-token variant: capture with that cap (part of the graph key) instead of kSegTokens.
    int seg_cap = 1;
    for (int s = 1; s < n && any_lora; ++s)
        if (b.seq_lora_slot[std::size_t(s)] == b.seq_lora_slot[std::size_t(s - 1)]) seg_cap = kSegTokens;
    int n_segs = 0;
    for (int s = 0; s < n;) {
        const int slot = b.seq_lora_slot.empty() ? 0 : b.seq_lora_slot[std::size_t(s)];
        int e = s + 1;
        while (e < n && e - s < seg_cap && (b.seq_lora_slot.empty() ? 0 : b.seq_lora_slot[std::size_t(e)]) == slot) ++e;
        h[o_segslot + n_segs] = slot;
        h[o_seg + ++n_segs] = e;
        s = e;
    }
    for (int i = n_segs; i < B; ++i) h[o_seg + i + 1] = n, h[o_segslot + i] = 0;
    kernels::plan_attention_splits(h.data() + o_qo, h.data() + o_kvp, h.data() + o_last, B, page_size, group, splits,
                                   plan);
    std::memcpy(h.data() + o_items, plan.items.data(), plan.items.size() * 16);
    std::memcpy(h.data() + o_groups, plan.groups.data(), plan.groups.size() * 16);
    h.insert(h.end(), b.kv_indices.begin(), b.kv_indices.end());
    h.resize(total, scratch_page);

    std::memcpy(h_meta.data(), h.data(), total * 4);
    cuda_check(cudaMemcpyAsync(meta, h_meta.data(), total * 4, cudaMemcpyHostToDevice, stream), "step upload");

    const auto key = std::make_tuple(B, any_lora, splits, seg_cap);
    auto it = graphs.find(key);
    if (it == graphs.end()) {
        StepMeta sm;
        sm.n = sm.n_seqs = sm.n_logits = B;
        sm.n_segs = B, sm.max_seg_len = seg_cap, sm.n_items = n_items, sm.n_groups = n_groups, sm.any_lora = any_lora;
        sm.split_decode_only = true;
        sm.token_ids = meta + o_tok, sm.positions = meta + o_pos, sm.kv_slots = meta + o_slot,
        sm.qo_indptr = meta + o_qo;
        sm.kv_indptr = meta + o_kvp, sm.kv_indices = meta + o_kv, sm.last_len = meta + o_last;
        sm.seg_indptr = meta + o_seg, sm.seg_slot = meta + o_segslot, sm.logits_idx = meta + o_logits;
        sm.items = reinterpret_cast<const kernels::AttentionWorkItem*>(meta + o_items);
        sm.groups = reinterpret_cast<const kernels::AttentionMergeGroup*>(meta + o_groups);
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
        cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        cuda_check(e, "cudaGraphInstantiate");
        it = graphs.emplace(key, exec).first;
        ++stats.captures;
    }
    cuda_check(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
    return true;
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
