// Tensor specs per quantization format and the validating binder; see quantized_linear.h.
#include "model/quantized_linear.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"

namespace loradesk::model {
namespace {

constexpr int kPack = 8;  // int4 values per int32

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string fmt_shape(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

[[noreturn]] void corrupt(const std::string& what) { throw_expected(ErrorCode::corrupt_file, what); }

int resolved_group(const QuantConfig& q, int64_t in) { return q.group_size == -1 ? int(in) : q.group_size; }

void check_packable(const QuantConfig& q, const std::string& prefix, int64_t out, int64_t in) {
    const int g = resolved_group(q, in);
    if (out % kPack != 0)
        corrupt(fmt::format("{}: {} int4 needs out_features divisible by 8, got {}", prefix,
                            quant_format_name(q.format), out));
    if (q.format == QuantFormat::awq && in % g != 0)
        corrupt(fmt::format("{}: awq needs in_features {} divisible by group_size {}", prefix, in, g));
    if (q.format == QuantFormat::gptq && in % kPack != 0)
        corrupt(fmt::format("{}: gptq needs in_features divisible by 8, got {}", prefix, in));
}

// Scales may be stored in any float dtype and, for per-tensor and per-channel FP8, in a few equivalent shapes.
bool scale_shape_ok(const QuantizedLinear& l, const std::vector<int64_t>& want, const std::vector<int64_t>& got) {
    if (got == want) return true;
    if (l.format == QuantFormat::fp8_tensor) return got.empty() || got == std::vector<int64_t>{1, 1};
    if (l.format == QuantFormat::fp8_channel) return got == std::vector<int64_t>{l.out_features};
    return false;
}

void check_g_idx(const TensorView& t, int64_t n_groups) {
    for (int64_t i = 0; i < t.numel(); ++i) {
        int32_t g;
        std::memcpy(&g, t.data + i * 4, 4);
        if (g < 0 || g >= n_groups)
            corrupt(fmt::format("tensor '{}' in '{}': g_idx[{}] = {} is outside the {} groups of scales", t.name,
                                t.file, i, g, n_groups));
    }
}

}  // namespace

int64_t QuantizedLinear::n_groups() const { return group_size > 0 ? ceil_div(in_features, group_size) : 0; }

std::size_t QuantizedLinear::bytes() const {
    std::size_t n = 0;
    for (const TensorView* t : {qweight, scales, zeros, g_idx})
        if (t) n += t->nbytes;
    return n;
}

std::vector<QuantTensorSpec> quantized_tensor_specs(const QuantConfig& q, const std::string& prefix, int64_t out,
                                                    int64_t in) {
    const std::string p = prefix + ".";
    switch (q.format) {
        case QuantFormat::none:
            return {{p + "weight", DType::bf16, {out, in}}};
        case QuantFormat::fp8_block:
            return {{p + "weight", DType::f8_e4m3, {out, in}},
                    {p + "weight_scale_inv", DType::f32, {ceil_div(out, q.block_out), ceil_div(in, q.block_in)}}};
        case QuantFormat::fp8_tensor:
            return {{p + "weight", DType::f8_e4m3, {out, in}}, {p + "weight_scale", DType::bf16, {1}}};
        case QuantFormat::fp8_channel:
            return {{p + "weight", DType::f8_e4m3, {out, in}}, {p + "weight_scale", DType::bf16, {out, 1}}};
        case QuantFormat::awq: {
            check_packable(q, prefix, out, in);
            const int64_t groups = in / q.group_size;
            return {{p + "qweight", DType::i32, {in, out / kPack}},
                    {p + "qzeros", DType::i32, {groups, out / kPack}},
                    {p + "scales", DType::f16, {groups, out}}};
        }
        case QuantFormat::gptq: {
            check_packable(q, prefix, out, in);
            const int64_t groups = ceil_div(in, resolved_group(q, in));
            return {{p + "qweight", DType::i32, {in / kPack, out}},
                    {p + "qzeros", DType::i32, {groups, out / kPack}},
                    {p + "scales", DType::f16, {groups, out}},
                    {p + "g_idx", DType::i32, {in}}};
        }
    }
    return {};
}

QuantizedLinear bind_quantized_linear(const TensorLookup& find, const QuantConfig& q, const std::string& prefix,
                                      int64_t out, int64_t in) {
    QuantizedLinear l;
    l.format = q.format;
    l.out_features = out;
    l.in_features = in;
    l.block_out = q.block_out;
    l.block_in = q.block_in;
    if (q.format == QuantFormat::awq || q.format == QuantFormat::gptq) l.group_size = resolved_group(q, in);
    if (q.format == QuantFormat::gptq && q.gptq_version == 1) l.zero_offset = 1;
    for (const QuantTensorSpec& spec : quantized_tensor_specs(q, prefix, out, in)) {
        const TensorView* t = find(spec.name);
        const std::string suffix = spec.name.substr(prefix.size() + 1);
        if (!t)
            corrupt(
                fmt::format("the {} checkpoint has no tensor '{}' {} (config.json's quantization_config says {} "
                            "but the weights are not laid out that way)",
                            quant_format_name(q.format), spec.name, fmt_shape(spec.shape), quant_description(q)));
        const bool is_scale = suffix == "weight_scale_inv" || suffix == "weight_scale" || suffix == "scales";
        const bool dtype_ok = is_scale ? is_float_dtype(t->dtype) : t->dtype == spec.dtype;
        if (!dtype_ok)
            corrupt(fmt::format("tensor '{}' in '{}' has dtype {} but {} stores it as {}", spec.name, t->file,
                                dtype_name(t->dtype), quant_format_name(q.format),
                                is_scale ? std::string("F32, F16 or BF16") : std::string(dtype_name(spec.dtype))));
        const bool shape_ok = is_scale ? scale_shape_ok(l, spec.shape, t->shape) : t->shape == spec.shape;
        if (!shape_ok)
            corrupt(fmt::format(
                "tensor '{}' in '{}' has shape {} but a {} projection [{}, {}] needs {} (config.json "
                "and the weights disagree)",
                spec.name, t->file, t->shape_string(), quant_description(q), out, in, fmt_shape(spec.shape)));
        if (suffix == "weight" || suffix == "qweight")
            l.qweight = t;
        else if (is_scale)
            l.scales = t;
        else if (suffix == "qzeros")
            l.zeros = t;
        else if (suffix == "g_idx")
            l.g_idx = t;
    }
    if (l.g_idx) check_g_idx(*l.g_idx, l.n_groups());
    return l;
}

}  // namespace loradesk::model
