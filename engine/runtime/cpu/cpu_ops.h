// Elementwise and matrix ops of the CPU reference runner: fp32 math over weights kept in their
// stored dtype (f32/f16/bf16, possibly unaligned inside a mapping), converted a row at a time.
// Written for clarity and determinism: a token's result never depends on the other tokens in the
// batch, so batched and single-sequence runs agree bit for bit.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "model/safetensors.h"

namespace loradesk::runtime::cpu {

// y[t, o] = sum_i W[o, i] x[t, i] (+ bias[o]).  W: [out, in] any float dtype; x: [n, in]; y: [n, out].
void linear(const model::TensorView& w, const model::TensorView* bias, const float* x, int n, float* y,
            ThreadPool& pool);

// Copies rows ids[t] of a [rows, dim] table into out [n, dim] as f32.
void embedding_rows(const model::TensorView& table, const int32_t* ids, int n, float* out);

// out[t] = x[t] * rsqrt(mean(x[t]^2) + eps) * weight, over rows of `dim` (in place allowed).
void rms_norm(const float* x, const model::TensorView& weight, int n, int dim, float eps, float* out);
void rms_norm(const float* x, const float* weight, int n, int dim, float eps, float* out);

// a[i] = silu(a[i]) * b[i]
// out = x rounded to e4m3 per row and block of block_cols columns (128, or dim for one scale per row): s = amax / 448
// (1 for an all-zero block), out = e4m3(x / s) * s (nearest, ties to even, saturating). out may be x.
void fp8_round_rows(const float* x, int n, int dim, int block_cols, float* out);
void silu_mul(float* a, const float* b, std::size_t n);

// 8-way unrolled dot product; the fixed summation order is part of the determinism contract.
float dot(const float* a, const float* b, int n);

}  // namespace loradesk::runtime::cpu
