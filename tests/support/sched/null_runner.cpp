// NullRunner: KV as token ids, logits from a hash of the KV a sequence reads.
#include "sched/null_runner.h"

#include "core/error.h"

namespace loradesk::sched {

NullRunner::NullRunner(model::ModelConfig cfg, bool hash_kv) : m_cfg(std::move(cfg)), m_hash_kv(hash_kv) {
    if (m_cfg.vocab_size <= 0) throw_error(ErrorCode::invalid_argument, "NullRunner needs a vocab_size");
}

runtime::MemoryReport NullRunner::memory() const {
    runtime::MemoryReport r;
    r.kv_bytes = m_kv.size() * sizeof(int32_t);
    return r;
}

void NullRunner::allocate_kv(int n_pages, int page_size) {
    m_n_pages = n_pages;
    m_kv.assign(std::size_t(n_pages) * std::size_t(page_size), -1);
}

int32_t NullRunner::expected_next(std::span<const int32_t> tokens) const {
    uint64_t h = 1469598103934665603ull;
    if (m_hash_kv)
        for (int32_t t : tokens) h = (h ^ uint64_t(uint32_t(t))) * 1099511628211ull;
    else
        h = uint64_t(uint32_t(tokens.back())) * 2654435761ull + tokens.size();
    return int32_t(h % uint64_t(m_cfg.vocab_size));
}

void NullRunner::forward(const runtime::ForwardBatch& b, std::vector<float>& logits) {
    if (m_kv.empty()) throw_error(ErrorCode::internal, "NullRunner::forward before allocate_kv");
    b.validate(m_n_pages, m_cfg.vocab_size);
    for (int32_t slot : b.seq_lora_slot)
        if (slot < 0 || slot > m_n_slots)
            throw_error(ErrorCode::internal,
                        "batch uses LoRA slot " + std::to_string(slot) + " that is not configured");
    if (on_forward) on_forward(b);
    ++m_n_forwards;
    const int ps = b.page_size;
    auto slot_of = [&](int s, int pos) -> int32_t& {
        return m_kv[std::size_t(b.kv_indices[std::size_t(b.kv_indptr[s] + pos / ps)]) * std::size_t(ps) +
                    std::size_t(pos % ps)];
    };
    logits.assign(b.logits_indices.size() * std::size_t(m_cfg.vocab_size), 0.0f);
    std::size_t row = 0;
    std::vector<int32_t> seen;
    for (int s = 0; s < b.n_seqs(); ++s) {
        for (int t = b.qo_indptr[s]; t < b.qo_indptr[s + 1]; ++t) slot_of(s, b.positions[t]) = b.token_ids[t];
        const int last = b.qo_indptr[s + 1] - 1;
        if (row < b.logits_indices.size() && b.logits_indices[row] == last) {
            seen.clear();
            if (m_hash_kv) {
                for (int pos = 0; pos < b.kv_len(s); ++pos) seen.push_back(slot_of(s, pos));
            } else {  // cheap mode for benches: only the last token and the length
                seen.assign(std::size_t(b.kv_len(s)), 0);
                seen.back() = b.token_ids[std::size_t(last)];
            }
            int32_t next = expected_next(seen);
            logits[row * std::size_t(m_cfg.vocab_size) + std::size_t(next)] = 10.0f;
            ++row;
        }
    }
}

}  // namespace loradesk::sched
