// SequenceDriver: a minimal page table + ForwardBatch builder for driving a ModelRunner directly
// (loradeskd logits/generate/bench, runner tests of every backend) without the scheduler and prefix cache. Pages
// are handed out in the order a caller-provided permutation says, so tests can scatter them.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/model_runner.h"

namespace loradesk::runtime {

class SequenceDriver {
  public:
    // Allocates the runner's KV pool (n_pages of page_size). page_order: the order free pages are
    // handed out (empty = 0, 1, 2, ...).
    SequenceDriver(ModelRunner& runner, int n_pages, int page_size, std::vector<int32_t> page_order = {});

    int add_sequence(int lora_slot = 0);  // returns its id
    int length(int seq) const { return int(m_seqs.at(std::size_t(seq)).length); }

    struct Work {
        int seq = 0;
        std::vector<int32_t> tokens;  // appended to the sequence this step
    };
    // Runs one forward over the listed sequences (their LoRA slots must be grouped: equal slots
    // adjacent). logits gets, per work item in order, a row for every new token (all_positions) or
    // only for the last one. Throws Error(capacity) when the pool runs out of pages.
    void step(const std::vector<Work>& work, bool all_positions, std::vector<float>& logits);
    ForwardBatch build(const std::vector<Work>& work, bool all_positions);

  private:
    struct Seq {
        int lora_slot = 0;
        int64_t length = 0;
        std::vector<int32_t> pages;
    };
    ModelRunner& m_runner;
    int m_page_size;
    std::vector<int32_t> m_free;  // back() is handed out next
    std::vector<Seq> m_seqs;
};

}  // namespace loradesk::runtime
