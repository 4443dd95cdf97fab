// ModelRunner's default implementations: what a runner without a faster path of its own does.
#include "runtime/model_runner.h"

#include <algorithm>
#include <limits>

namespace loradesk::runtime {

std::size_t ModelRunner::lora_slot_bytes(int max_rank) const {
    const model::ModelConfig& c = config();
    // Every module adapted at max_rank, A [r, in] and B [out, r] in bf16: the slot layout of the device runner.
    const std::size_t per_layer = std::size_t(c.hidden_size + c.q_dim()) + 2 * std::size_t(c.hidden_size + c.kv_dim()) +
                                  std::size_t(c.q_dim() + c.hidden_size) +
                                  3 * std::size_t(c.hidden_size + c.intermediate_size);
    return std::size_t(c.n_layers) * per_layer * std::size_t(std::max(max_rank, 0)) * 2;
}

void ModelRunner::forward_sampled(const ForwardBatch& batch, std::span<const uint8_t> want_logits,
                                  std::vector<int32_t>& argmax, std::vector<float>& logits, const RowMasks& masks) {
    std::vector<float> all;
    forward(batch, all);
    if (masks.ready) masks.ready();
    const std::size_t vocab = std::size_t(config().vocab_size), rows = batch.logits_indices.size();
    argmax.resize(rows);
    logits.clear();
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = all.data() + r * vocab;
        std::size_t best = 0;
        float best_v = -std::numeric_limits<float>::max();
        const int which = r < masks.row_mask.size() ? masks.row_mask[r] : -1;
        if (which < 0) {
            for (std::size_t i = 0; i < vocab; ++i)
                if (row[i] > best_v) best_v = row[i], best = i;  // NaN compares false: it never wins, as on the device
        } else {
            const uint32_t* m = masks.words.data() + std::size_t(which) * std::size_t(masks.words_per_row);
            const std::size_t end = std::min(vocab, std::size_t(masks.words_per_row) * 32);
            for (std::size_t i = 0; i < end; ++i)
                if ((m[i / 32] >> (i % 32) & 1u) && row[i] > best_v) best_v = row[i], best = i;
        }
        argmax[r] = int32_t(best);
        if (r < want_logits.size() && want_logits[r]) logits.insert(logits.end(), row, row + vocab);
    }
}

}  // namespace loradesk::runtime
