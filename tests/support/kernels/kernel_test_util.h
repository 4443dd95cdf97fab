// Helpers shared by the kernel tests: seeded random bf16/f32 data, random paged-KV batches, and error
// metrics (relative L2 error and max abs difference) used with per-dtype tolerances.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "ref/ref_kernels.h"

namespace loradesk::kernels::test {

inline std::vector<uint16_t> random_bf16(std::mt19937& rng, std::size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = ref::f32_to_bf16(dist(rng));
    return v;
}

inline std::vector<float> random_f32(std::mt19937& rng, std::size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

inline std::vector<float> to_f32(const std::vector<uint16_t>& v) {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = ref::bf16_to_f32(v[i]);
    return out;
}

// ||a - b|| / ||b||; NaN anywhere gives +inf so it never passes.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
        num += double(a[i] - b[i]) * (a[i] - b[i]);
        den += double(b[i]) * b[i];
    }
    return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = a.size() == b.size() ? 0.0 : INFINITY;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
        m = std::max(m, double(std::fabs(a[i] - b[i])));
    }
    return m;
}

// Batch invariance checks: x with its first row (row_stride elements) copied into each of its rows, and the
// first (row, column) of y's first n columns where a row differs from row 0 (row -1 when none does).
inline std::vector<uint16_t> repeat_first_row(const std::vector<uint16_t>& x, int rows, int64_t row_stride) {
    std::vector<uint16_t> same(x);
    for (int r = 1; r < rows; ++r)
        std::copy(x.begin(), x.begin() + row_stride, same.begin() + std::ptrdiff_t(r) * row_stride);
    return same;
}

inline std::pair<int, int> first_row_difference(const std::vector<uint16_t>& y, int rows, int n, int64_t row_stride) {
    for (int r = 1; r < rows; ++r)
        for (int c = 0; c < n; ++c)
            if (y[std::size_t(r * row_stride + c)] != y[std::size_t(c)]) return {r, c};
    return {-1, -1};
}

// A random paged batch: sequences with n_q new tokens each on top of a cached prefix, pages drawn from a
// shuffled pool so that page order never matches memory order.
struct PagedBatch {
    int page_size = 16;
    int n_pages = 0;
    std::vector<int32_t> qo_indptr{0}, kv_indptr{0}, kv_indices, kv_last_page_len;
    std::vector<int32_t> positions, kv_slots;  // per query token
    int n_tokens() const { return qo_indptr.back(); }
    int n_seqs() const { return int(qo_indptr.size()) - 1; }
};

// seqs: (n_q, kv_len) pairs with kv_len >= n_q >= 1.
inline PagedBatch make_paged_batch(std::mt19937& rng, const std::vector<std::pair<int, int>>& seqs, int page_size) {
    PagedBatch b;
    b.page_size = page_size;
    for (auto [n_q, kv_len] : seqs) b.n_pages += (kv_len + page_size - 1) / page_size;
    b.n_pages += 3;  // spare pages nobody owns
    std::vector<int32_t> pool(b.n_pages);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    std::size_t next = 0;
    for (auto [n_q, kv_len] : seqs) {
        int pages = (kv_len + page_size - 1) / page_size;
        std::vector<int32_t> mine(pool.begin() + next, pool.begin() + next + pages);
        next += pages;
        b.kv_indices.insert(b.kv_indices.end(), mine.begin(), mine.end());
        b.kv_indptr.push_back(int32_t(b.kv_indices.size()));
        b.kv_last_page_len.push_back(kv_len - (pages - 1) * page_size);
        b.qo_indptr.push_back(b.qo_indptr.back() + n_q);
        for (int i = 0; i < n_q; ++i) {
            int pos = kv_len - n_q + i;
            b.positions.push_back(pos);
            b.kv_slots.push_back(mine[pos / page_size] * page_size + pos % page_size);
        }
    }
    return b;
}

}  // namespace loradesk::kernels::test
