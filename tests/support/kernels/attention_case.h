// One paged-attention case as the attention tests and kernel_bench use it: params over host q / K / V pools
// and a PagedBatch (for the C++ twin), and their device copies with params pointing at them. The device
// output starts NaN-poisoned, so that rows a kernel never writes fail the comparison.
#pragma once

#include <vector>

#include "device_buffer.h"
#include "kernel_params.h"
#include "kernel_test_util.h"

namespace loradesk::kernels::test {

constexpr uint16_t kNanBf16 = 0x7fc1;

// Params over host data; out may be null (the benches time kernels, they do not run the twin on everything).
inline AttentionParams host_attention_params(const PagedBatch& b, const std::vector<uint16_t>& q, int q_row_stride,
                                             const std::vector<uint16_t>& k_pages, const std::vector<uint16_t>& v_pages,
                                             int n_heads, int n_kv_heads, int head_dim, float scale, uint16_t* out) {
    AttentionParams p;
    p.q = q.data(), p.q_row_stride = q_row_stride, p.k_pages = k_pages.data(), p.v_pages = v_pages.data();
    p.qo_indptr = b.qo_indptr.data(), p.kv_indptr = b.kv_indptr.data();
    p.kv_indices = b.kv_indices.data(), p.kv_last_page_len = b.kv_last_page_len.data();
    p.n_seqs = b.n_seqs(), p.page_size = b.page_size, p.n_heads = n_heads, p.n_kv_heads = n_kv_heads;
    p.head_dim = head_dim, p.scale = scale, p.out = out;
    return p;
}

struct DeviceAttention {
    DeviceBuffer<uint16_t> q, k, v, out;
    DeviceBuffer<int32_t> qo_indptr, kv_indptr, kv_indices, last_page_len;
    AttentionParams p;  // host's shape, device pointers

    DeviceAttention(const AttentionParams& host, const PagedBatch& b, const std::vector<uint16_t>& q_host,
                    const std::vector<uint16_t>& k_host, const std::vector<uint16_t>& v_host)
        : q(q_host),
          k(k_host),
          v(v_host),
          out(std::vector<uint16_t>(std::size_t(b.n_tokens()) * host.n_heads * host.head_dim, kNanBf16)),
          qo_indptr(b.qo_indptr),
          kv_indptr(b.kv_indptr),
          kv_indices(b.kv_indices),
          last_page_len(b.kv_last_page_len),
          p(host) {
        p.q = q.get(), p.k_pages = k.get(), p.v_pages = v.get(), p.qo_indptr = qo_indptr.get();
        p.kv_indptr = kv_indptr.get(), p.kv_indices = kv_indices.get(), p.kv_last_page_len = last_page_len.get();
        p.out = out.get();
    }
};

}  // namespace loradesk::kernels::test
