// BaseOnlyResidency: the AdapterResidency of an engine loop that serves the base model only (scheduler
// tests and benches; test support, not shipped). It has no slots; any adapter asked for fails with a clear error.
#pragma once

#include "lora/adapter_residency.h"

namespace loradesk::sched {

class BaseOnlyResidency final : public lora::AdapterResidency {
  public:
    int n_slots() const override { return 0; }
    void prefetch(const std::string&) override {}
    std::vector<lora::SlotGrant> acquire_slots(const std::vector<std::string>& digests) override;
};

}  // namespace loradesk::sched
