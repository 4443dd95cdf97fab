// CPU reference ops; see cpu_ops.h.
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/dequantize.h"
#include "model/quantize.h"

namespace loradesk::runtime::cpu {

float dot(const float* a, const float* b, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
    float tail = 0;
    for (; i < n; ++i) tail += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

void linear(const model::TensorView& w, const model::TensorView* bias, const float* x, int n, float* y,
            ThreadPool& pool) {
    const int out = int(w.shape[0]), in = int(w.shape[1]);
    const std::size_t row_bytes = std::size_t(in) * dtype_size(w.dtype);
    std::vector<float> b;
    if (bias) b = bias->to_f32();
    pool.parallel_for(
        std::size_t(out),
        [&](std::size_t begin, std::size_t end) {
            std::vector<float> row(static_cast<std::size_t>(in));  // one converted weight row, reused for every token
            for (std::size_t o = begin; o < end; ++o) {
                convert_to_f32(w.data + o * row_bytes, w.dtype, std::size_t(in), row.data());
                const float add = bias ? b[o] : 0.0f;
                for (int t = 0; t < n; ++t)
                    y[std::size_t(t) * out + o] = dot(row.data(), x + std::size_t(t) * in, in) + add;
            }
        },
        16);
}

void embedding_rows(const model::TensorView& table, const int32_t* ids, int n, float* out) {
    const std::size_t dim = std::size_t(table.shape[1]);
    const std::size_t row_bytes = dim * dtype_size(table.dtype);
    for (int t = 0; t < n; ++t)
        convert_to_f32(table.data + std::size_t(ids[t]) * row_bytes, table.dtype, dim, out + t * dim);
}

void rms_norm(const float* x, const float* weight, int n, int dim, float eps, float* out) {
    for (int t = 0; t < n; ++t) {
        const float* xr = x + std::size_t(t) * dim;
        float* yr = out + std::size_t(t) * dim;
        float ss = dot(xr, xr, dim);
        const float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
        for (int i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * inv);
    }
}

void rms_norm(const float* x, const model::TensorView& weight, int n, int dim, float eps, float* out) {
    std::vector<float> w = weight.to_f32();
    rms_norm(x, w.data(), n, dim, eps, out);
}

void fp8_round_rows(const float* x, int n, int dim, int block_cols, float* out) {
    for (int t = 0; t < n; ++t)
        for (int b = 0; b < dim; b += block_cols) {
            const float* in = x + std::size_t(t) * dim;
            float* o = out + std::size_t(t) * dim;
            const int end = std::min(dim, b + block_cols);
            float amax = 0.0f;
            for (int c = b; c < end; ++c) amax = std::max(amax, std::fabs(in[c]));
            const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
            for (int c = b; c < end; ++c) o[c] = model::fp8_e4m3_to_f32(model::f32_to_fp8_e4m3(in[c] / s)) * s;
        }
}

void silu_mul(float* a, const float* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

}  // namespace loradesk::runtime::cpu
