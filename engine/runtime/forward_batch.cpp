#include "runtime/forward_batch.h"

#include <string>

#include "core/error.h"

namespace loradesk::runtime {
namespace {

[[noreturn]] void bad(const std::string& what) { throw_error(ErrorCode::internal, "invalid ForwardBatch: " + what); }

}  // namespace

void ForwardBatch::validate(int32_t n_kv_pages, int32_t vocab_size) const {
    const int32_t n = n_seqs();
    if (positions.size() != token_ids.size()) bad("positions and token_ids differ in length");
    if (qo_indptr.empty() || qo_indptr[0] != 0 || qo_indptr.back() != n_tokens())
        bad("qo_indptr does not span the tokens");
    if (int32_t(kv_indptr.size()) != n + 1 || kv_indptr[0] != 0 || kv_indptr.back() != int32_t(kv_indices.size()))
        bad("kv_indptr does not span kv_indices");
    if (int32_t(kv_last_page_len.size()) != n || int32_t(seq_lora_slot.size()) != n)
        bad("per-sequence arrays differ in length");
    if (page_size <= 0) bad("page_size must be positive");
    for (int32_t s = 0; s < n; ++s) {
        int32_t q = qo_indptr[s + 1] - qo_indptr[s];
        if (q < 0) bad("qo_indptr decreases at sequence " + std::to_string(s));
        if (kv_indptr[s + 1] < kv_indptr[s]) bad("kv_indptr decreases at sequence " + std::to_string(s));
        if (kv_indptr[s + 1] > kv_indptr[s] && (kv_last_page_len[s] < 1 || kv_last_page_len[s] > page_size))
            bad("kv_last_page_len out of range at sequence " + std::to_string(s));
        int32_t len = kv_len(s);
        if (q > len) bad("sequence " + std::to_string(s) + " has more new tokens than KV slots");
        for (int32_t t = qo_indptr[s]; t < qo_indptr[s + 1]; ++t) {
            if (positions[t] != len - q + (t - qo_indptr[s]))
                bad("position of token " + std::to_string(t) + " does not follow its KV");
            if (token_ids[t] < 0 || token_ids[t] >= vocab_size) bad("token id out of range at " + std::to_string(t));
        }
    }
    for (int32_t p : kv_indices)
        if (p < 0 || p >= n_kv_pages) bad("page index " + std::to_string(p) + " outside the pool");
    for (std::size_t i = 0; i < logits_indices.size(); ++i) {
        if (logits_indices[i] < 0 || logits_indices[i] >= n_tokens()) bad("logits index out of range");
        if (i && logits_indices[i] <= logits_indices[i - 1]) bad("logits_indices not increasing");
    }
}

}  // namespace loradesk::runtime
