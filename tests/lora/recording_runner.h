// A ModelRunner test double for the tier tests: keeps what each LoRA slot holds (identified by the
// marker scale the test loader writes into the weights) and logs every slot operation.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/model_runner.h"

namespace loradesk::lora::testing {

class RecordingRunner final : public runtime::ModelRunner {
  public:
    model::ModelConfig m_config;
    std::vector<int> slot_marker;  // [n_slots + 1], -1 = empty
    std::vector<std::string> events;
    int max_rank = 0;
    bool fail_next_load = false;

    const model::ModelConfig& config() const override { return m_config; }
    std::string device_name() const override { return "recording"; }
    runtime::MemoryReport memory() const override { return {}; }
    std::size_t kv_page_bytes(int) const override { return 0; }
    void allocate_kv(int, int) override {}
    void configure_lora_slots(int n_slots, int rank) override {
        slot_marker.assign(std::size_t(n_slots) + 1, -1);
        max_rank = rank;
    }
    void load_lora_slot(int slot, const runtime::LoraWeights& w) override {
        if (fail_next_load) {
            fail_next_load = false;
            throw Error(ErrorCode::internal, "device out of memory");
        }
        if (slot < 1 || slot >= int(slot_marker.size()) || w.max_rank() > max_rank)
            throw Error(ErrorCode::internal, "bad slot load");
        slot_marker[std::size_t(slot)] = int(w.layers.at(0)[0].scale);
        events.push_back("load " + std::to_string(slot));
    }
    void clear_lora_slot(int slot) override {
        slot_marker.at(std::size_t(slot)) = -1;
        events.push_back("clear " + std::to_string(slot));
    }
    void forward(const runtime::ForwardBatch&, std::vector<float>&) override {}
};

}  // namespace loradesk::lora::testing
