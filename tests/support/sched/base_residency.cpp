// BaseOnlyResidency: fails every adapter, since there is nowhere to put one.
#include "sched/base_residency.h"

namespace loradesk::sched {

std::vector<lora::SlotGrant> BaseOnlyResidency::acquire_slots(const std::vector<std::string>& digests) {
    std::vector<lora::SlotGrant> out(digests.size());
    for (std::size_t i = 0; i < digests.size(); ++i) {
        out[i].state = lora::Residency::failed;
        out[i].error = "adapter " + digests[i] +
                       " cannot be served: this engine has no LoRA slots (start it with --max-loras 1 or more)";
    }
    return out;
}

}  // namespace loradesk::sched
