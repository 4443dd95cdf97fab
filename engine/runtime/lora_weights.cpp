#include "runtime/lora_weights.h"

#include <algorithm>

namespace loradesk::runtime {

std::string_view lora_module_name(LoraModule m) {
    static constexpr std::string_view kNames[kNumLoraModules] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                                 "gate_proj", "up_proj", "down_proj"};
    return kNames[int(m)];
}

int LoraWeights::max_rank() const {
    int r = 0;
    for (auto& layer : layers)
        for (auto& m : layer) r = std::max(r, m.rank);
    return r;
}

std::size_t LoraWeights::bytes() const {
    std::size_t n = 0;
    for (auto& layer : layers)
        for (auto& m : layer) n += (m.a.size() + m.b.size()) * sizeof(float);
    return n;
}

}  // namespace loradesk::runtime
