// NullRunner: a ModelRunner without a model, for scheduler tests and benches. It keeps the token id of
// every KV slot it is asked to write and answers each sampling row with a one-hot logit row whose token
// is a hash of the sequence's whole KV (read back through the page table), so wrong page tables, bad
// prefix reuse or lost KV change the output. Validates every batch it is given. Not thread-safe.
#pragma once

#include <functional>
#include <span>

#include "runtime/model_runner.h"

namespace loradesk::sched {

class NullRunner final : public runtime::ModelRunner {
  public:
    explicit NullRunner(model::ModelConfig cfg, bool hash_kv = true);

    const model::ModelConfig& config() const override { return m_cfg; }
    std::string device_name() const override { return "null"; }
    runtime::MemoryReport memory() const override;
    std::size_t kv_page_bytes(int page_size) const override { return std::size_t(page_size) * 64; }
    void allocate_kv(int n_pages, int page_size) override;
    void configure_lora_slots(int n_slots, int max_rank) override { m_n_slots = n_slots; }
    void load_lora_slot(int slot, const runtime::LoraWeights&) override {}
    void clear_lora_slot(int slot) override {}
    void forward(const runtime::ForwardBatch& batch, std::vector<float>& logits) override;

    // The token a sampling row gets for a sequence holding `tokens` (what the hash computes).
    int32_t expected_next(std::span<const int32_t> tokens) const;
    // Called with every batch before it runs (tests record and check them).
    std::function<void(const runtime::ForwardBatch&)> on_forward;
    int64_t n_forwards() const { return m_n_forwards; }

  private:
    model::ModelConfig m_cfg;
    bool m_hash_kv;
    int m_n_pages = 0;
    int m_n_slots = 0;
    int64_t m_n_forwards = 0;
    std::vector<int32_t> m_kv;  // [n_pages * page_size] token id written to each KV slot
};

}  // namespace loradesk::sched
