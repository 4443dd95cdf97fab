// CudaRunner weight upload: one device arena holding the embeddings, norms and bf16 projections (q|k|v and
// gate|up fused into one matrix each) and, for quantized checkpoints, each call site packed for the quantized
// kernels (quant_pack.h) in its checkpoint layout, plus their split-K workspace and the scratch the prefill path
// expands slices of a projection into. A site the kernels cannot read is dequantized to bf16 on the host (logged
// with the reason).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "model/dequantize.h"
#include "model/model_weights.h"
#include "quant_gemv.h"
#include "quant_mma.h"
#include "ref/ref_kernels.h"
#include "runtime/cuda/cuda_runner_impl.h"
#include "runtime/cuda/quant_pack.h"

namespace loradesk::runtime::cuda {

namespace {

std::size_t align_up(std::size_t v) { return (v + 255) & ~std::size_t(255); }

// One part of an uploaded bf16 matrix: a float tensor, or a quantized projection dequantized on the host.
struct UploadPart {
    UploadPart(const model::TensorView* t) : dense(t) {}  // NOLINT(google-explicit-constructor): list brevity
    UploadPart(const model::TensorView* t, const model::QuantizedLinear* q) : dense(t), quant(q) {}
    std::size_t numel() const {
        return quant ? std::size_t(quant->out_features * quant->in_features) : std::size_t(dense->numel());
    }
    const model::TensorView* dense = nullptr;
    const model::QuantizedLinear* quant = nullptr;
};

// Appends a part as bf16 to host staging (quantized: f32 dequantization, then rounded to bf16).
void append_bf16(const UploadPart& p, std::vector<uint16_t>& out) {
    if (p.quant) {
        const std::vector<float> f = model::dequantize(*p.quant);
        const std::size_t at = out.size();
        out.resize(at + f.size());
        for (std::size_t i = 0; i < f.size(); ++i) out[at + i] = f32_to_bf16(f[i]);
        return;
    }
    const model::TensorView* t = p.dense;
    std::size_t n = std::size_t(t->numel()), at = out.size();
    out.resize(at + n);
    if (t->dtype == DType::bf16) {
        std::memcpy(out.data() + at, t->data, n * 2);
        return;
    }
    std::vector<float> f = t->to_f32();
    for (std::size_t i = 0; i < n; ++i) out[at + i] = f32_to_bf16(f[i]);
}

// Arena bytes of a packed part: each tensor on its own 256-byte boundary (the kernels load 16 bytes at a time).
std::size_t part_bytes(const PackedQuantPart& p) {
    return align_up(p.qweight.size() * 4) + align_up(p.qzeros.size() * 4) + align_up(p.scales.size() * 2) +
           align_up(p.g_idx.size() * 4) + align_up(p.k_order.size() * 4) + align_up(p.w_fp8.size()) +
           align_up(p.w_scale.size() * 4);
}

// Copies a packed part to `at` in the arena and returns its params pointed there.
kernels::QuantGemvParams upload_part(const PackedQuantPart& p, uint8_t* at) {
    kernels::QuantGemvParams q = p.params;
    auto put = [&at](const void* src, std::size_t bytes) -> uint8_t* {
        if (bytes == 0) return nullptr;
        cuda_check(cudaMemcpy(at, src, bytes, cudaMemcpyHostToDevice), "quantized weight upload");
        uint8_t* placed = at;
        at += align_up(bytes);
        return placed;
    };
    q.qweight = reinterpret_cast<const int32_t*>(put(p.qweight.data(), p.qweight.size() * 4));
    q.qzeros = reinterpret_cast<const int32_t*>(put(p.qzeros.data(), p.qzeros.size() * 4));
    q.scales = reinterpret_cast<const uint16_t*>(put(p.scales.data(), p.scales.size() * 2));
    q.g_idx = reinterpret_cast<const int32_t*>(put(p.g_idx.data(), p.g_idx.size() * 4));
    q.k_order = reinterpret_cast<const int32_t*>(put(p.k_order.data(), p.k_order.size() * 4));
    q.w_fp8 = put(p.w_fp8.data(), p.w_fp8.size());
    q.w_scale = reinterpret_cast<const float*>(put(p.w_scale.data(), p.w_scale.size() * 4));
    return q;
}

// Scratch for the prefill path's dequantized slices: the largest part, capped at 32 Mi elements (64 MiB) but
// never under 8 rows of the widest input.
constexpr int64_t kDequantScratchCap = int64_t(32) << 20;

}  // namespace

// Plans every tensor's place in one arena, then converts or packs on the host and copies, one item at a time.
// Quantized sites are packed twice (once to size them, once to copy) so the host never holds a packed model.
void CudaRunner::Impl::upload_weights(const std::string& model_dir) {
    model::ModelWeights w(model_dir);
    cfg = w.config();
    if (cfg.head_dim % 2 != 0 || cfg.head_dim > 256)
        throw_expected(ErrorCode::unsupported,
                       fmt::format("the CUDA runner supports head_dim up to 256 (even); this model has {} "
                                   "(use --device cpu)",
                                   cfg.head_dim));
    struct Item {
        std::vector<UploadPart> parts;
        const uint16_t** dst;
    };
    struct QuantItem {
        std::vector<const model::QuantizedLinear*> projections;
        int layer = 0, site = 0;
        std::vector<std::size_t> part_bytes;
    };
    std::vector<Item> items;
    std::vector<QuantItem> quant_items;
    layers.assign(std::size_t(cfg.n_layers), {});
    items.push_back({{&w.embed()}, &embed});
    items.push_back({{&w.final_norm()}, &final_norm});
    if (!cfg.tie_word_embeddings) items.push_back({{&w.lm_head()}, &lm_head});
    int64_t max_part_elems = 0, max_in = 0, bf16_sites = 0;
    bool any_act_order = false;
    bool any_fp8_w8a8 = false;
    std::size_t quant_ws_bytes = 0;
    std::string first_refusal;
    for (int l = 0; l < cfg.n_layers; ++l) {
        const auto& s = w.layer(l);
        DeviceLayer& d = layers[std::size_t(l)];
        items.push_back({{s.input_norm}, &d.in_norm});
        items.push_back({{s.post_norm}, &d.post_norm});
        // A call site (0 q|k|v, 1 o, 2 gate|up, 3 down) goes to the quantized kernels when its projections are
        // stored quantized and pack; otherwise it is a bf16 matrix.
        auto site = [&](int index, std::vector<UploadPart> parts, const uint16_t** dst) {
            std::vector<const model::QuantizedLinear*> qs;
            for (const UploadPart& p : parts)
                if (p.quant) qs.push_back(p.quant);
            if (qs.size() == parts.size()) {
                const PackedQuantSite packed = pack_quant_site(qs, false);  // sized only: unsorted, same bytes
                if (!packed.parts.empty()) {
                    QuantItem qi{qs, l, index, {}};
                    for (const auto& part : packed.parts) {
                        qi.part_bytes.push_back(part_bytes(part));
                        max_part_elems = std::max(max_part_elems, int64_t(part.params.n) * part.params.k);
                        max_in = std::max(max_in, int64_t(part.params.k));
                        any_act_order = any_act_order || !part.g_idx.empty();
                        // Every fp8 layout can take W8A8 (fp8_w8a8_route; per-tensor scales are packed per channel).
                        any_fp8_w8a8 = any_fp8_w8a8 || part.params.format == kernels::QuantFormat::fp8_e4m3;
                        quant_ws_bytes = std::max(
                            {quant_ws_bytes,
                             kernels::quant_gemv_workspace_bytes(part.params.n, part.params.k, part.params.group_size),
                             kernels::quant_mma_workspace_bytes(part.params.n, part.params.k)});
                    }
                    quant_items.push_back(std::move(qi));
                    return;
                }
                if (first_refusal.empty()) first_refusal = packed.why_not;
                ++bf16_sites;
            }
            items.push_back({std::move(parts), dst});
        };
        site(0, {{s.q, s.quant.q}, {s.k, s.quant.k}, {s.v, s.quant.v}}, &d.wqkv);
        site(1, {{s.o, s.quant.o}}, &d.wo);
        site(2, {{s.gate, s.quant.gate}, {s.up, s.quant.up}}, &d.wgu);
        site(3, {{s.down, s.quant.down}}, &d.wd);
        if (s.q_norm) items.push_back({{s.q_norm}, &d.q_norm});
        if (s.k_norm) items.push_back({{s.k_norm}, &d.k_norm});
        if (s.q_bias) items.push_back({{s.q_bias, s.k_bias, s.v_bias}, &d.bqkv});
        if (s.o_bias) items.push_back({{s.o_bias}, &d.bo});
        if (s.gate_bias) items.push_back({{s.gate_bias, s.up_bias}, &d.bgu});
        if (s.down_bias) items.push_back({{s.down_bias}, &d.bd});
    }
    if (w.quantized())
        log::info("{} weights ({:.2f} GiB packed): {} call sites on the quantized kernels{}",
                  model::quant_description(cfg.quant), w.quantized_bytes() / 1073741824.0, quant_items.size(),
                  bf16_sites ? fmt::format(", {} dequantized to bf16 on upload ({})", bf16_sites, first_refusal)
                             : std::string());
    std::vector<std::size_t> offsets, quant_offsets;
    std::size_t total = 0;
    for (const auto& it : items) {
        offsets.push_back(total);
        std::size_t n = 0;
        for (const auto& p : it.parts) n += p.numel();
        total += align_up(n * 2);
    }
    for (const auto& qi : quant_items) {
        quant_offsets.push_back(total);
        for (std::size_t b : qi.part_bytes) total += b;
    }
    const std::size_t freq_offset = total;
    total += align_up(std::size_t(cfg.head_dim / 2) * sizeof(float));
    std::size_t quant_ws_offset = 0, scratch_offset = 0;
    if (!quant_items.empty()) {
        quant_ws_offset = total;
        total += align_up(quant_ws_bytes);
        scratch_offset = total;
        dequant_scratch_elems = std::max(std::min(max_part_elems, kDequantScratchCap), 8 * max_in);
        total += align_up(std::size_t(dequant_scratch_elems) * 2);
    }
    // Act-order GPTQ sorted at load: x gathered into its rows' order (24 MiB at Qwen3-8B shapes).
    std::size_t gather_offset = 0;
    if (any_act_order) {
        gather_offset = total;
        gather_row_elems = max_in;
        total += align_up(std::size_t(kGatherRows) * std::size_t(max_in) * 2);
    }
    // fp8 W8A8: x quantized for the fp8 GEMM, kFp8Rows tokens at a time (13.5 MiB at Qwen3-8B shapes; per-channel
    // weights use one scale per token of the per-128-column scale rows).
    std::size_t fp8_x_offset = 0, fp8_scale_offset = 0;
    if (any_fp8_w8a8) {
        fp8_x_offset = total;
        total += align_up(std::size_t(kFp8Rows) * std::size_t(max_in));
        fp8_scale_offset = total;
        total += align_up(std::size_t((max_in + 127) / 128) * kernels::fp8_act_scale_ld(kFp8Rows) * sizeof(float));
    }
    weights.allocate(total, "the model weights");
    std::vector<uint16_t> host;
    for (std::size_t i = 0; i < items.size(); ++i) {
        host.clear();
        for (const auto& p : items[i].parts) append_bf16(p, host);
        cuda_check(cudaMemcpy(weights.data() + offsets[i], host.data(), host.size() * 2, cudaMemcpyHostToDevice),
                   "weight upload");
        *items[i].dst = reinterpret_cast<const uint16_t*>(weights.data() + offsets[i]);
    }
    std::unique_ptr<ThreadPool> sort_pool;  // act-order rows are sorted on every core (0.6 ns per weight on one)
    if (any_act_order) sort_pool = std::make_unique<ThreadPool>(0);
    for (std::size_t i = 0; i < quant_items.size(); ++i) {
        const QuantItem& qi = quant_items[i];
        const PackedQuantSite packed = pack_quant_site(qi.projections, true, sort_pool.get());
        DeviceQuantSite& dst = layers[std::size_t(qi.layer)].quant[qi.site];
        uint8_t* at = weights.data() + quant_offsets[i];
        for (const auto& part : packed.parts) {
            dst.parts.push_back({upload_part(part, at), part.out_offset});
            at += part_bytes(part);
        }
    }
    if (!quant_items.empty()) {
        // The split-K counters start zeroed; every quant_gemv launch leaves them zeroed again.
        quant_workspace = weights.data() + quant_ws_offset;
        cuda_check(cudaMemset(quant_workspace, 0, quant_ws_bytes), "quantized workspace");
        dequant_scratch = reinterpret_cast<uint16_t*>(weights.data() + scratch_offset);
    }
    if (any_act_order) gather_scratch = reinterpret_cast<uint16_t*>(weights.data() + gather_offset);
    if (any_fp8_w8a8) {
        fp8_xq = weights.data() + fp8_x_offset;
        fp8_x_scale = reinterpret_cast<float*>(weights.data() + fp8_scale_offset);
        fp8_row_elems = max_in;
    }
    if (cfg.tie_word_embeddings) lm_head = embed;
    kernels::ref::RopeScalingSpec rs;
    rs.kind = cfg.rope_scaling.type == model::RopeType::linear   ? kernels::RopeKind::linear
              : cfg.rope_scaling.type == model::RopeType::llama3 ? kernels::RopeKind::llama3
                                                                 : kernels::RopeKind::default_;
    rs.factor = cfg.rope_scaling.factor;
    rs.low_freq_factor = cfg.rope_scaling.low_freq_factor;
    rs.high_freq_factor = cfg.rope_scaling.high_freq_factor;
    rs.original_max_position_embeddings = cfg.rope_scaling.original_max_position_embeddings;
    auto freq = kernels::ref::rope_inv_freq(cfg.head_dim, cfg.rope_theta, rs);
    inv_freq = reinterpret_cast<float*>(weights.data() + freq_offset);
    cuda_check(cudaMemcpy(inv_freq, freq.data(), freq.size() * sizeof(float), cudaMemcpyHostToDevice),
               "rope table upload");
}

}  // namespace loradesk::runtime::cuda
