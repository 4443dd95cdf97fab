// CpuRunner forward pass: embed -> [RMSNorm, QKV (+bias, +LoRA), q/k norm, RoPE, paged attention,
// o_proj, residual, RMSNorm, SwiGLU MLP, residual] x layers -> final norm + lm_head on logits rows.
#include "runtime/cpu/cpu_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "runtime/cpu/cpu_attention.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/rope.h"

namespace loradesk::runtime::cpu {

struct CpuRunner::Scratch {
    std::vector<float> x, h, q, k, v, attn, o, gate, up, down;
    std::vector<float> rounded;  // a projection's input rounded to e4m3 (set_fp8_activation_rounding)
};

CpuRunner::CpuRunner(const std::string& model_dir, int threads)
    : m_weights(model_dir), m_pool(threads), m_layers(m_weights, &m_pool) {
    m_inv_freq = rope_inv_freq(config());
    m_slots.resize(1);
}

CpuRunner::~CpuRunner() = default;

std::string CpuRunner::device_name() const { return fmt::format("cpu ({} threads)", m_pool.size()); }

MemoryReport CpuRunner::memory() const {
    MemoryReport r;
    r.weight_bytes = m_weights.bytes() + m_layers.bytes();  // mapped checkpoint + f32 copies of quantized projections
    r.kv_bytes = m_page_size > 0 ? kv_page_bytes(m_page_size) * std::size_t(m_n_pages) : 0;
    for (const auto& s : m_slots)
        if (s) r.lora_slot_bytes += s->bytes();
    return r;
}

std::size_t CpuRunner::kv_page_bytes(int page_size) const {
    const auto& c = config();
    return std::size_t(c.n_layers) * 2 * std::size_t(page_size) * std::size_t(c.kv_dim()) * sizeof(float);
}

void CpuRunner::allocate_kv(int n_pages, int page_size) {
    if (n_pages <= 0 || page_size <= 0)
        throw_expected(ErrorCode::invalid_argument,
                       fmt::format("KV pool needs n_pages > 0 and page_size > 0 (got {}, {})", n_pages, page_size));
    const std::size_t per_layer = std::size_t(n_pages) * std::size_t(page_size) * std::size_t(config().kv_dim());
    m_k_cache.assign(std::size_t(config().n_layers), std::vector<float>(per_layer, 0.0f));
    m_v_cache.assign(std::size_t(config().n_layers), std::vector<float>(per_layer, 0.0f));
    m_n_pages = n_pages;
    m_page_size = page_size;
}

void CpuRunner::configure_lora_slots(int n_slots, int max_rank) {
    if (n_slots < 0 || max_rank < 0)
        throw_expected(ErrorCode::invalid_argument, "LoRA slots and max rank must not be negative");
    m_slots.clear();
    m_slots.resize(std::size_t(n_slots) + 1);
    m_max_rank = max_rank;
}

std::pair<int, int> CpuRunner::module_dims(LoraModule m) const {
    const auto& c = config();
    switch (m) {
        case LoraModule::q:
            return {c.hidden_size, c.q_dim()};
        case LoraModule::k:
        case LoraModule::v:
            return {c.hidden_size, c.kv_dim()};
        case LoraModule::o:
            return {c.q_dim(), c.hidden_size};
        case LoraModule::gate:
        case LoraModule::up:
            return {c.hidden_size, c.intermediate_size};
        case LoraModule::down:
            return {c.intermediate_size, c.hidden_size};
    }
    return {0, 0};
}

void CpuRunner::load_lora_slot(int slot, const LoraWeights& w) {
    if (slot < 1 || slot >= int(m_slots.size()))
        throw_error(ErrorCode::invalid_argument,
                    fmt::format("LoRA slot {} outside 1..{}", slot, int(m_slots.size()) - 1));
    if (int(w.layers.size()) != config().n_layers)
        throw_expected(
            ErrorCode::invalid_argument,
            fmt::format(
                "LoRA weights have {} layers but the base model has {} (is the adapter for another base model?)",
                w.layers.size(), config().n_layers));
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        for (int mi = 0; mi < kNumLoraModules; ++mi) {
            const LoraModuleWeights& m = w.layers[l][std::size_t(mi)];
            if (m.rank == 0) continue;
            auto [in, out] = module_dims(LoraModule(mi));
            const std::string where = fmt::format("layer {} {}", l, lora_module_name(LoraModule(mi)));
            if (m.rank < 0 || m.rank > m_max_rank)
                throw_expected(ErrorCode::invalid_argument,
                               fmt::format("LoRA {} has rank {} but slots hold at most rank {} (raise --max-lora-rank)",
                                           where, m.rank, m_max_rank));
            if (m.a.size() != std::size_t(m.rank) * std::size_t(in) ||
                m.b.size() != std::size_t(out) * std::size_t(m.rank))
                throw_expected(
                    ErrorCode::invalid_argument,
                    fmt::format(
                        "LoRA {} expects A [{}, {}] and B [{}, {}] for this base model but got {} and {} values "
                        "(is the adapter for another base model?)",
                        where, m.rank, in, out, m.rank, m.a.size(), m.b.size()));
        }
    }
    m_slots[std::size_t(slot)] = std::make_unique<LoraWeights>(w);
}

void CpuRunner::clear_lora_slot(int slot) {
    if (slot < 1 || slot >= int(m_slots.size()))
        throw_error(ErrorCode::invalid_argument,
                    fmt::format("LoRA slot {} outside 1..{}", slot, int(m_slots.size()) - 1));
    m_slots[std::size_t(slot)].reset();
}

void CpuRunner::apply_lora(LoraModule m, int layer, const float* x, int in, int n, float* y, int out,
                           const std::vector<int>& token_slot) {
    m_pool.parallel_for(std::size_t(n), [&](std::size_t begin, std::size_t end) {
        std::vector<float> ax;
        for (std::size_t t = begin; t < end; ++t) {
            const int slot = token_slot[t];
            if (slot == 0 || !m_slots[std::size_t(slot)]) continue;
            const LoraModuleWeights& w = m_slots[std::size_t(slot)]->layers[std::size_t(layer)][std::size_t(int(m))];
            if (w.rank == 0) continue;
            ax.assign(std::size_t(w.rank), 0.0f);
            for (int r = 0; r < w.rank; ++r)
                ax[std::size_t(r)] = dot(w.a.data() + std::size_t(r) * in, x + t * std::size_t(in), in);
            float* yt = y + t * std::size_t(out);
            for (int o = 0; o < out; ++o)
                yt[o] += w.scale * dot(w.b.data() + std::size_t(o) * w.rank, ax.data(), w.rank);
        }
    });
}

const float* CpuRunner::projection_input(std::initializer_list<const model::QuantizedLinear*> site, const float* x,
                                         int n, int dim, std::vector<float>& rounded) const {
    if (m_fp8_act_min_tokens <= 0 || n < m_fp8_act_min_tokens || site.size() == 0 || !*site.begin()) return x;
    // The CUDA runner quantizes a call site's projections together or not at all (cuda_weights.cpp), all of one
    // format.
    const model::QuantFormat format = (*site.begin())->format;
    const auto same = [&](const model::QuantizedLinear* q) { return q && q->format == format; };
    const bool fp8 = format == model::QuantFormat::fp8_block || format == model::QuantFormat::fp8_channel ||
                     format == model::QuantFormat::fp8_tensor;
    if (!fp8 || !std::all_of(site.begin(), site.end(), same)) return x;
    rounded.resize(std::size_t(n) * std::size_t(dim));
    fp8_round_rows(x, n, dim, format == model::QuantFormat::fp8_block ? 128 : dim, rounded.data());
    return rounded.data();
}

void CpuRunner::attention_block(int layer, const ForwardBatch& b, const std::vector<int>& token_slot, Scratch& s) {
    const auto& c = config();
    const auto& w = m_layers.layer(layer);
    const int n = b.n_tokens(), hid = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim();
    rms_norm(s.x.data(), *w.input_norm, n, hid, c.rms_norm_eps, s.h.data());
    const model::LayerQuant& lq = m_weights.layer(layer).quant;
    const float* hq = projection_input({lq.q, lq.k, lq.v}, s.h.data(), n, hid, s.rounded);
    linear(*w.q, w.q_bias, hq, n, s.q.data(), m_pool);
    linear(*w.k, w.k_bias, hq, n, s.k.data(), m_pool);
    linear(*w.v, w.v_bias, hq, n, s.v.data(), m_pool);
    apply_lora(LoraModule::q, layer, s.h.data(), hid, n, s.q.data(), qd, token_slot);
    apply_lora(LoraModule::k, layer, s.h.data(), hid, n, s.k.data(), kvd, token_slot);
    apply_lora(LoraModule::v, layer, s.h.data(), hid, n, s.v.data(), kvd, token_slot);
    if (c.qk_norm) {  // Qwen3: RMSNorm over head_dim per head, before RoPE
        rms_norm(s.q.data(), *w.q_norm, n * c.n_heads, c.head_dim, c.rms_norm_eps, s.q.data());
        rms_norm(s.k.data(), *w.k_norm, n * c.n_kv_heads, c.head_dim, c.rms_norm_eps, s.k.data());
    }
    for (int t = 0; t < n; ++t) {
        apply_rope(s.q.data() + std::size_t(t) * qd, c.n_heads, c.head_dim, b.positions[std::size_t(t)], m_inv_freq);
        apply_rope(s.k.data() + std::size_t(t) * kvd, c.n_kv_heads, c.head_dim, b.positions[std::size_t(t)],
                   m_inv_freq);
    }
    PagedKvLayer kv{m_k_cache[std::size_t(layer)].data(), m_v_cache[std::size_t(layer)].data(), m_page_size,
                    c.n_kv_heads, c.head_dim};
    write_kv(kv, b, s.k.data(), s.v.data());
    paged_attention(kv, b, s.q.data(), c.n_heads, 1.0f / std::sqrt(float(c.head_dim)), s.attn.data(), m_pool);
    linear(*w.o, w.o_bias, projection_input({lq.o}, s.attn.data(), n, qd, s.rounded), n, s.o.data(), m_pool);
    apply_lora(LoraModule::o, layer, s.attn.data(), qd, n, s.o.data(), hid, token_slot);
    for (std::size_t i = 0; i < std::size_t(n) * hid; ++i) s.x[i] += s.o[i];
}

void CpuRunner::mlp_block(int layer, int n, const std::vector<int>& token_slot, Scratch& s) {
    const auto& c = config();
    const auto& w = m_layers.layer(layer);
    const int hid = c.hidden_size, f = c.intermediate_size;
    rms_norm(s.x.data(), *w.post_norm, n, hid, c.rms_norm_eps, s.h.data());
    const model::LayerQuant& lq = m_weights.layer(layer).quant;
    const float* hq = projection_input({lq.gate, lq.up}, s.h.data(), n, hid, s.rounded);
    linear(*w.gate, w.gate_bias, hq, n, s.gate.data(), m_pool);
    linear(*w.up, w.up_bias, hq, n, s.up.data(), m_pool);
    apply_lora(LoraModule::gate, layer, s.h.data(), hid, n, s.gate.data(), f, token_slot);
    apply_lora(LoraModule::up, layer, s.h.data(), hid, n, s.up.data(), f, token_slot);
    silu_mul(s.gate.data(), s.up.data(), std::size_t(n) * f);
    linear(*w.down, w.down_bias, projection_input({lq.down}, s.gate.data(), n, f, s.rounded), n, s.down.data(), m_pool);
    apply_lora(LoraModule::down, layer, s.gate.data(), f, n, s.down.data(), hid, token_slot);
    for (std::size_t i = 0; i < std::size_t(n) * hid; ++i) s.x[i] += s.down[i];
}

void CpuRunner::forward(const ForwardBatch& b, std::vector<float>& logits) {
    const auto& c = config();
    if (m_page_size == 0) throw_error(ErrorCode::internal, "CpuRunner::forward before allocate_kv");
    if (b.page_size != m_page_size)
        throw_error(ErrorCode::internal,
                    fmt::format("batch page_size {} differs from the pool's {}", b.page_size, m_page_size));
    b.validate(m_n_pages, c.vocab_size);
    const int n = b.n_tokens();
    std::vector<int> token_slot(std::size_t(n), 0);
    for (int s = 0; s < b.n_seqs(); ++s) {
        const int slot = b.seq_lora_slot[std::size_t(s)];
        if (slot < 0 || slot >= int(m_slots.size()))
            throw_error(ErrorCode::internal, fmt::format("sequence {} uses LoRA slot {} but only 0..{} exist", s, slot,
                                                         int(m_slots.size()) - 1));
        if (slot > 0 && !m_slots[std::size_t(slot)])
            throw_error(ErrorCode::internal,
                        fmt::format("sequence {} uses LoRA slot {} which holds no adapter", s, slot));
        for (int t = b.qo_indptr[s]; t < b.qo_indptr[s + 1]; ++t) token_slot[std::size_t(t)] = slot;
    }
    Scratch s;
    const std::size_t nn = std::size_t(n);
    s.x.resize(nn * c.hidden_size);
    s.h.resize(nn * c.hidden_size);
    s.q.resize(nn * c.q_dim());
    s.k.resize(nn * c.kv_dim());
    s.v.resize(nn * c.kv_dim());
    s.attn.resize(nn * c.q_dim());
    s.o.resize(nn * c.hidden_size);
    s.gate.resize(nn * c.intermediate_size);
    s.up.resize(nn * c.intermediate_size);
    s.down.resize(nn * c.hidden_size);
    embedding_rows(m_weights.embed(), b.token_ids.data(), n, s.x.data());
    for (int l = 0; l < c.n_layers; ++l) {
        attention_block(l, b, token_slot, s);
        mlp_block(l, n, token_slot, s);
    }
    const int n_logits = int(b.logits_indices.size());
    std::vector<float> rows(std::size_t(n_logits) * c.hidden_size);
    for (int i = 0; i < n_logits; ++i)
        std::copy_n(s.x.data() + std::size_t(b.logits_indices[std::size_t(i)]) * c.hidden_size, c.hidden_size,
                    rows.data() + std::size_t(i) * c.hidden_size);
    rms_norm(rows.data(), m_weights.final_norm(), n_logits, c.hidden_size, c.rms_norm_eps, rows.data());
    logits.assign(std::size_t(n_logits) * c.vocab_size, 0.0f);
    linear(m_weights.lm_head(), nullptr, rows.data(), n_logits, logits.data(), m_pool);
}

}  // namespace loradesk::runtime::cpu
