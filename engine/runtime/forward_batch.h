// ForwardBatch: one engine step as flat arrays, the contract between the scheduler (which builds it)
// and every ModelRunner (which executes it). Layout follows flashinfer's paged-KV conventions so that
// the CUDA kernels can take these arrays as they are.
//
// Sequences are ordered by LoRA slot (the batch builder sorts them), so tokens that share an adapter are
// contiguous; each runner cuts seq_lora_slot into its own segments (the CUDA one in cuda/step_plan.h).
#pragma once

#include <cstdint>
#include <vector>

namespace loradesk::runtime {

struct ForwardBatch {
    // Tokens to run this step, all sequences concatenated.
    std::vector<int32_t> token_ids;  // [n_tokens]
    std::vector<int32_t> positions;  // [n_tokens] absolute position of each token in its sequence
    std::vector<int32_t> qo_indptr;  // [n_seqs + 1] tokens of sequence s are [qo_indptr[s], qo_indptr[s+1])

    // Paged KV. Pages of sequence s are kv_indices[kv_indptr[s] .. kv_indptr[s+1]). After this step the
    // sequence holds kv_len(s) = (n_pages - 1) * page_size + kv_last_page_len[s] tokens; this step's
    // tokens are the last (qo_indptr[s+1] - qo_indptr[s]) of them, and the runner writes their K/V
    // into those slots before attending. Earlier slots hold cached K/V (prefix cache or earlier steps).
    int32_t page_size = 16;
    std::vector<int32_t> kv_indptr;         // [n_seqs + 1]
    std::vector<int32_t> kv_indices;        // [total pages]
    std::vector<int32_t> kv_last_page_len;  // [n_seqs], in 1..page_size

    // LoRA. Slot 0 = base model (no adapter).
    std::vector<int32_t> seq_lora_slot;  // [n_seqs]

    // Token rows whose logits are needed (the last token of each sequence that samples this step).
    std::vector<int32_t> logits_indices;  // [n_logits], increasing

    int32_t n_tokens() const { return int32_t(token_ids.size()); }
    int32_t n_seqs() const { return qo_indptr.empty() ? 0 : int32_t(qo_indptr.size()) - 1; }
    int32_t kv_len(int32_t s) const {
        int32_t n_pages = kv_indptr[s + 1] - kv_indptr[s];
        return n_pages == 0 ? 0 : (n_pages - 1) * page_size + kv_last_page_len[s];
    }

    // Checks every invariant above (sizes, ranges, ordering); throws Error(internal) naming the first
    // violation. Runners call it in debug paths and tests.
    void validate(int32_t n_kv_pages, int32_t vocab_size) const;
};

}  // namespace loradesk::runtime
