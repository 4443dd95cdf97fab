// Paged KV cache and causal attention of the CPU reference runner. The cache of one layer is
// [n_pages, page_size, n_kv_heads, head_dim] for K and for V (f32), addressed through the batch's
// kv_indptr / kv_indices / kv_last_page_len exactly as the CUDA kernels address theirs.
#pragma once

#include <vector>

#include "core/thread_pool.h"
#include "runtime/forward_batch.h"

namespace loradesk::runtime::cpu {

struct PagedKvLayer {
    float* k = nullptr;  // [n_pages, page_size, n_kv_heads, head_dim]
    float* v = nullptr;  // same
    int page_size = 16;
    int n_kv_heads = 0;
    int head_dim = 0;

    // Start of the [head_dim] vector for KV slot `slot` (0-based position in the sequence's KV) of
    // sequence s, head kv_head.
    std::size_t offset(const ForwardBatch& b, int s, int slot, int kv_head) const {
        const int page = b.kv_indices[std::size_t(b.kv_indptr[s] + slot / page_size)];
        const std::size_t row = std::size_t(page) * page_size + std::size_t(slot % page_size);
        return (row * std::size_t(n_kv_heads) + std::size_t(kv_head)) * std::size_t(head_dim);
    }
};

// Stores this step's K and V ([n_tokens, n_kv_heads * head_dim]) into each sequence's last slots.
void write_kv(const PagedKvLayer& kv, const ForwardBatch& b, const float* k, const float* v);

// out[t, h, :] = softmax(q[t, h] . K[s, 0..p_t] * scale) V[s, 0..p_t] with p_t the token's own slot
// (causal) and K/V heads shared by n_heads / n_kv_heads query heads (GQA).
void paged_attention(const PagedKvLayer& kv, const ForwardBatch& b, const float* q, int n_heads, float scale,
                     float* out, ThreadPool& pool);

}  // namespace loradesk::runtime::cpu
