// Packing of quantized call sites; see quant_pack.h. Checkpoint tensors may be unaligned inside their mapping,
// so words are copied out with memcpy.
#include "runtime/cuda/quant_pack.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace loradesk::runtime::cuda {
namespace {

using model::QuantFormat;
using model::QuantizedLinear;

std::vector<int32_t> read_i32(const model::TensorView& t) {
    std::vector<int32_t> v(std::size_t(t.numel()));
    std::memcpy(v.data(), t.data, v.size() * 4);
    return v;
}

bool is_fp8(QuantFormat f) {
    return f == QuantFormat::fp8_block || f == QuantFormat::fp8_tensor || f == QuantFormat::fp8_channel;
}

// Appends the rows of a [rows, cols] matrix as columns [.., + cols) of a [rows, total] one under construction:
// `out` holds rows x total values, `at` is the first column this part fills.
template <typename T>
void put_columns(std::vector<T>& out, int64_t total, int64_t at, const std::vector<T>& part, int64_t rows,
                 int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        std::memcpy(out.data() + r * total + at, part.data() + r * cols, std::size_t(cols) * sizeof(T));
}

// int4 scales as fp16, exactly; false when a value is not representable (the kernels read fp16 only).
bool scales_to_fp16(const model::TensorView& t, std::vector<uint16_t>& out) {
    if (t.dtype == DType::f16) {
        out.resize(std::size_t(t.numel()));
        std::memcpy(out.data(), t.data, out.size() * 2);
        return true;
    }
    const std::vector<float> f = t.to_f32();
    out.resize(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) {
        out[i] = f32_to_f16(f[i]);
        if (f16_to_f32(out[i]) != f[i]) return false;
    }
    return true;
}

std::string describe(const QuantizedLinear& l) { return l.qweight ? l.qweight->name : std::string("a projection"); }

// Whether the site's projections can share one matrix: the same format, inputs and groups (and, for GPTQ, the
// same g_idx, which act-order derives from each projection's inputs), and no fp8 block row split between two.
bool fusable(const std::vector<const QuantizedLinear*>& ps) {
    const QuantizedLinear& a = *ps.front();
    for (std::size_t i = 1; i < ps.size(); ++i) {
        const QuantizedLinear& b = *ps[i];
        if (b.format != a.format || b.in_features != a.in_features || b.group_size != a.group_size ||
            b.zero_offset != a.zero_offset || b.block_out != a.block_out || b.block_in != a.block_in)
            return false;
    }
    if (a.format == QuantFormat::fp8_block)  // a block row may not straddle two projections
        for (std::size_t i = 0; i + 1 < ps.size(); ++i)
            if (ps[i]->out_features % a.block_out) return false;
    if (a.format == QuantFormat::gptq) {
        const std::vector<int32_t> g0 = read_i32(*a.g_idx);
        for (std::size_t i = 1; i < ps.size(); ++i)
            if (read_i32(*ps[i]->g_idx) != g0) return false;
    }
    return true;
}

// Checks what the kernels need of one projection; empty when they can read it.
std::string unsupported_reason(const QuantizedLinear& l) {
    switch (l.format) {
        case QuantFormat::fp8_block:
            if (l.block_out != 128 || l.block_in != 128)
                return fmt::format("{}: fp8 blocks of {}x{} (the kernels read 128x128)", describe(l), l.block_out,
                                   l.block_in);
            return {};
        case QuantFormat::fp8_tensor:
        case QuantFormat::fp8_channel:
            return {};
        case QuantFormat::awq:
            if (l.in_features % l.group_size)
                return fmt::format("{}: AWQ group {} does not divide {} inputs", describe(l), l.group_size,
                                   l.in_features);
            [[fallthrough]];
        case QuantFormat::gptq:
            if (l.out_features % 8 || l.in_features % 8 || l.group_size <= 0)
                return fmt::format("{}: int4 shape [{}, {}] (the kernels need multiples of 8)", describe(l),
                                   l.out_features, l.in_features);
            if (l.zero_offset != 0 && l.zero_offset != 1)
                return fmt::format("{}: zero offset {}", describe(l), l.zero_offset);
            return {};
        case QuantFormat::none:
            break;
    }
    return fmt::format("{}: not quantized", describe(l));
}

// Act-order GPTQ: sorts qweight's [k / 8, n] rows by group (stable), when every group then holds exactly G rows,
// the last one what is left, as GPTQ's desc_act writes g_idx (the inverse permutation divided by G). The scales and
// zeros stay as they are, indexed by k / G now. False, changing nothing, for any other g_idx.
bool sort_rows_by_group(PackedQuantPart& part, const std::vector<int32_t>& g, int64_t k, int64_t n, int group_size,
                        ThreadPool* pool) {
    if (k % 8 != 0 || group_size <= 0) return false;  // GPTQ packs whole words of 8 rows
    std::vector<int32_t> order(std::size_t(k), 0);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return g[std::size_t(a)] < g[std::size_t(b)]; });
    for (int64_t i = 0; i < k; ++i)
        if (g[std::size_t(order[std::size_t(i)])] != i / group_size) return false;
    std::vector<int32_t> sorted(part.qweight.size(), 0);
    const auto* src = reinterpret_cast<const uint32_t*>(part.qweight.data());
    auto* dst = reinterpret_cast<uint32_t*>(sorted.data());
    // One output row of words at a time, from its 8 source rows: each word written once (a loaded model's worth
    // of nibbles goes through here, so it is the load's cost for act-order checkpoints), rows spread over the pool.
    auto rows = [&](std::size_t w0, std::size_t w1) {
        for (auto w = int64_t(w0); w < int64_t(w1); ++w) {
            const uint32_t* srow[8];
            unsigned shift[8];
            for (int i = 0; i < 8; ++i) {
                const int64_t from = order[std::size_t(w * 8 + i)];
                srow[i] = src + from / 8 * n, shift[i] = unsigned(from % 8) * 4;
            }
            uint32_t* drow = dst + w * n;
            for (int64_t c = 0; c < n; ++c) {
                uint32_t word = 0;
                for (int i = 0; i < 8; ++i) word |= ((srow[i][c] >> shift[i]) & 15u) << (4 * i);
                drow[c] = word;
            }
        }
    };
    if (pool)
        pool->parallel_for(std::size_t(k / 8), rows, 16);
    else
        rows(0, std::size_t(k / 8));
    part.qweight = std::move(sorted);
    part.k_order = std::move(order);
    return true;
}

// Packs `ps` (all fusable, or a single projection) as one part.
bool pack_part(const std::vector<const QuantizedLinear*>& ps, bool sort_act_order, ThreadPool* pool,
               PackedQuantPart& part, std::string& why_not) {
    const QuantizedLinear& a = *ps.front();
    int64_t n = 0;
    for (const QuantizedLinear* p : ps) n += p->out_features;
    const int64_t k = a.in_features;
    kernels::QuantGemvParams& q = part.params;
    q.n = int(n), q.k = int(k);
    if (is_fp8(a.format)) {
        q.format = kernels::QuantFormat::fp8_e4m3;
        // Per-tensor scales are packed per channel (the one scale repeated): cuBLASLt (13.1, H100) has no W8A8
        // algorithm for a scalar weight scale beside per-token x scales, and a fused site needs per-row scales anyway.
        q.fp8_scaling =
            a.format == QuantFormat::fp8_block ? kernels::Fp8Scaling::block128 : kernels::Fp8Scaling::per_channel;
        part.w_fp8.resize(std::size_t(n * k));
        int64_t row = 0;
        for (const QuantizedLinear* p : ps) {
            std::memcpy(part.w_fp8.data() + row * k, p->qweight->data, std::size_t(p->out_features * k));
            std::vector<float> s = p->scales->to_f32();
            if (a.format == QuantFormat::fp8_tensor) s.assign(std::size_t(p->out_features), s[0]);
            part.w_scale.insert(part.w_scale.end(), s.begin(), s.end());
            row += p->out_features;
        }
        return true;
    }
    const bool awq = a.format == QuantFormat::awq;
    const int64_t groups = a.n_groups(), packs = n / 8;
    q.format = awq ? kernels::QuantFormat::awq_int4 : kernels::QuantFormat::gptq_int4;
    q.group_size = a.group_size, q.zero_plus_one = a.zero_offset == 1;
    part.qweight.resize(std::size_t(awq ? k * packs : k / 8 * n));
    part.qzeros.resize(std::size_t(groups * packs));
    part.scales.resize(std::size_t(groups * n));
    int64_t col = 0;
    for (const QuantizedLinear* p : ps) {
        const int64_t pn = p->out_features;
        std::vector<uint16_t> s;
        if (!scales_to_fp16(*p->scales, s)) {
            why_not = fmt::format("{}: scales that fp16 cannot hold exactly", describe(*p));
            return false;
        }
        if (awq)
            put_columns(part.qweight, packs, col / 8, read_i32(*p->qweight), k, pn / 8);
        else
            put_columns(part.qweight, n, col, read_i32(*p->qweight), k / 8, pn);
        put_columns(part.qzeros, packs, col / 8, read_i32(*p->zeros), groups, pn / 8);
        put_columns(part.scales, n, col, s, groups, pn);
        col += pn;
    }
    if (!awq) {
        std::vector<int32_t> g = read_i32(*a.g_idx);
        for (int64_t i = 0; i < k; ++i)
            if (g[std::size_t(i)] != i / a.group_size) {
                // Act-order: rows sorted by group for the fast kernels, else the GEMV's slower gathering path.
                if (!sort_act_order || !sort_rows_by_group(part, g, k, n, a.group_size, pool))
                    part.g_idx = std::move(g);
                break;
            }
    }
    return true;
}

}  // namespace

std::size_t PackedQuantPart::bytes() const {
    return 4 * (qweight.size() + qzeros.size() + g_idx.size() + k_order.size()) + 2 * scales.size() + w_fp8.size() +
           4 * w_scale.size();
}

kernels::QuantGemvParams PackedQuantPart::host_params() const {
    kernels::QuantGemvParams p = params;
    p.qweight = qweight.data(), p.qzeros = qzeros.data(), p.scales = scales.data();
    p.g_idx = g_idx.empty() ? nullptr : g_idx.data();
    p.k_order = k_order.empty() ? nullptr : k_order.data();
    p.w_fp8 = w_fp8.data(), p.w_scale = w_scale.data();
    return p;
}

std::size_t PackedQuantSite::bytes() const {
    std::size_t n = 0;
    for (const auto& p : parts) n += p.bytes();
    return n;
}

PackedQuantSite pack_quant_site(const std::vector<const model::QuantizedLinear*>& projections, bool sort_act_order,
                                ThreadPool* pool) {
    PackedQuantSite site;
    for (const QuantizedLinear* p : projections) {
        site.why_not = p ? unsupported_reason(*p) : "a projection of the site is not quantized";
        if (!site.why_not.empty()) return site;
    }
    std::vector<std::vector<const QuantizedLinear*>> groups;
    if (fusable(projections))
        groups.push_back(projections);
    else
        for (const QuantizedLinear* p : projections) groups.push_back({p});
    int offset = 0;
    for (const auto& g : groups) {
        PackedQuantPart part;
        if (!pack_part(g, sort_act_order, pool, part, site.why_not)) {
            site.parts.clear();
            return site;
        }
        part.out_offset = offset;
        offset += part.params.n;
        site.parts.push_back(std::move(part));
    }
    return site;
}

}  // namespace loradesk::runtime::cuda
