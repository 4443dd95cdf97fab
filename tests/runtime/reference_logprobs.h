// The reference for prompt scoring tests: one forward over a whole prompt on a runner whose KV pool starts at page
// 0, and the log-softmax of every row in double. Row i scores token i + 1 (and row n - 1 the next token).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/forward_batch.h"
#include "runtime/model_runner.h"

namespace loradesk::test {

// The runner needs (ids.size() + 15) / 16 KV pages of 16 tokens and, for slot > 0, that slot loaded.
inline std::vector<std::vector<double>> full_prompt_logprobs(runtime::ModelRunner& runner, int slot,
                                                             const std::vector<int32_t>& ids) {
    const int ps = 16, n = int(ids.size()), n_pages = (n + ps - 1) / ps;
    runtime::ForwardBatch b;
    b.page_size = ps;
    b.token_ids = ids;
    for (int i = 0; i < n; ++i) b.positions.push_back(i), b.logits_indices.push_back(i);
    b.qo_indptr = {0, n};
    b.kv_indptr = {0, n_pages};
    for (int p = 0; p < n_pages; ++p) b.kv_indices.push_back(p);
    b.kv_last_page_len = {n - (n_pages - 1) * ps};
    b.seq_lora_slot = {slot};
    std::vector<float> logits;
    runner.forward(b, logits);
    const std::size_t V = std::size_t(runner.config().vocab_size);
    std::vector<std::vector<double>> out;
    for (int r = 0; r < n; ++r) {
        const float* row = logits.data() + std::size_t(r) * V;
        double max = row[0], sum = 0;
        for (std::size_t i = 0; i < V; ++i) max = std::max(max, double(row[i]));
        for (std::size_t i = 0; i < V; ++i) sum += std::exp(double(row[i]) - max);
        std::vector<double> lp(V);
        for (std::size_t i = 0; i < V; ++i) lp[i] = double(row[i]) - max - std::log(sum);
        out.push_back(std::move(lp));
    }
    return out;
}

}  // namespace loradesk::test
