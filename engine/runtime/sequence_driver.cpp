// Builds ForwardBatches from a private page table; see sequence_driver.h.
#include "runtime/sequence_driver.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace loradesk::runtime {

SequenceDriver::SequenceDriver(ModelRunner& runner, int n_pages, int page_size, std::vector<int32_t> page_order)
    : m_runner(runner), m_page_size(page_size) {
    m_runner.allocate_kv(n_pages, page_size);
    if (page_order.empty()) {
        page_order.resize(std::size_t(n_pages));
        std::iota(page_order.begin(), page_order.end(), 0);
    }
    m_free.assign(page_order.rbegin(), page_order.rend());
}

int SequenceDriver::add_sequence(int lora_slot) {
    m_seqs.push_back({lora_slot, 0, {}});
    return int(m_seqs.size()) - 1;
}

ForwardBatch SequenceDriver::build(const std::vector<Work>& work, bool all_positions) {
    ForwardBatch b;
    b.page_size = m_page_size;
    b.qo_indptr = {0};
    b.kv_indptr = {0};
    for (const Work& w : work) {
        Seq& s = m_seqs.at(std::size_t(w.seq));
        if (w.tokens.empty())
            throw_error(ErrorCode::invalid_argument, "a step must add at least one token per sequence");
        for (std::size_t i = 0; i < w.tokens.size(); ++i) {
            b.token_ids.push_back(w.tokens[i]);
            b.positions.push_back(int32_t(s.length + int64_t(i)));
        }
        s.length += int64_t(w.tokens.size());
        while (int64_t(s.pages.size()) * m_page_size < s.length) {
            if (m_free.empty())
                throw_expected(ErrorCode::capacity, "out of KV pages: the prompt plus new tokens exceed the KV pool");
            s.pages.push_back(m_free.back());
            m_free.pop_back();
        }
        b.qo_indptr.push_back(b.n_tokens());
        b.kv_indices.insert(b.kv_indices.end(), s.pages.begin(), s.pages.end());
        b.kv_indptr.push_back(int32_t(b.kv_indices.size()));
        b.kv_last_page_len.push_back(int32_t(s.length - int64_t(s.pages.size() - 1) * m_page_size));
        b.seq_lora_slot.push_back(s.lora_slot);
        if (all_positions) {
            for (int32_t t = b.qo_indptr[b.qo_indptr.size() - 2]; t < b.n_tokens(); ++t) b.logits_indices.push_back(t);
        } else {
            b.logits_indices.push_back(b.n_tokens() - 1);
        }
    }
    return b;
}

void SequenceDriver::step(const std::vector<Work>& work, bool all_positions, std::vector<float>& logits) {
    ForwardBatch b = build(work, all_positions);
    m_runner.forward(b, logits);
}

}  // namespace loradesk::runtime
