// Plain C++ reference twins of every CUDA kernel in kernels/: same arguments, f32 arithmetic, written
// for clarity. They are the oracle of tests/kernels and build without CUDA. Host-side tables that both
// sides need (the rotary inv_freq table) live here too.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel_params.h"

namespace loradesk::kernels::ref {

float bf16_to_f32(uint16_t v);
uint16_t f32_to_bf16(float f);  // round to nearest even, NaN stays NaN

struct RopeScalingSpec {
    RopeKind kind = RopeKind::default_;
    float factor = 1.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int original_max_position_embeddings = 8192;
};
// inv_freq[i] = theta^(-2i/head_dim), then scaled as Hugging Face's default/linear/llama3 rope does.
std::vector<float> rope_inv_freq(int head_dim, float theta, const RopeScalingSpec& scaling);

// out[t] = table[ids[t]] in f32 (the residual stream); ids outside [0, vocab) give a zero row.
void embedding_gather(const uint16_t* table, const int32_t* ids, int n_tokens, int hidden, int vocab, float* out);

// For i < n_rows, r = rows ? rows[i] : i: residual[r] += x[r] (when x; bf16(x[r] + x_delta[r]) with x_delta), then
// out[i] = bf16(residual[r] / rms(residual[r]) * weight). rows must be distinct.
void add_rmsnorm(const uint16_t* x, const float* x_delta, float* residual, const uint16_t* weight, const int32_t* rows,
                 int n_rows, int hidden, float eps, uint16_t* out);

void rope_kv_write(const RopeKvParams& p);
void attention(const AttentionParams& p);

// out[t, c] = bf16(silu(gate_up[t, c]) * gate_up[t, inter + c]); gate_up rows are 2*inter wide. With delta, each
// gate_up value is read as bf16(gate_up + delta).
void silu_mul(const uint16_t* gate_up, const float* delta, int n_tokens, int inter, uint16_t* out);
// y[t, c] = bf16(y[t, c] + bias[c]) for c < cols.
void bias_add(uint16_t* y, int64_t y_row_stride, const uint16_t* bias, int n_tokens, int cols);
// out[t, i] = x[t, order[i]] for i < cols (out rows cols wide).
void gather_columns(const uint16_t* x, int64_t x_row_stride, const int32_t* order, int n_tokens, int cols,
                    uint16_t* out);
// out[t] = index of the largest logits[t, :] (lowest index on ties; NaN never wins).
void argmax(const float* logits, int n_rows, int vocab, int32_t* out);
// argmax over the tokens each row's mask allows (kernels::masked_argmax's twin).
void masked_argmax(const float* logits, int n_rows, int vocab, const uint32_t* masks, const int32_t* mask_of_row,
                   int mask_words, int32_t* out);

void sgmv_shrink(const SgmvParams& p);
void sgmv_expand(const SgmvParams& p);
// act rows of the tokens the segments cover: sgmv_expand on a copy of y, then silu_mul (kernels::sgmv_expand_swiglu).
void sgmv_expand_swiglu(const SgmvParams& p, uint16_t* act);
// The skinny GEMM with its fused epilogues (GemvParams); also writes the LoRA xa rows it uses.
void gemv(const GemvParams& p);

}  // namespace loradesk::kernels::ref
