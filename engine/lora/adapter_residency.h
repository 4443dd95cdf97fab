// AdapterResidency: how the scheduler gets adapters into device slots for a step.
// Implemented by the tiered store (disk -> host -> device slot); called on the engine loop thread only.
// Adapters are identified by content digest (never by name), so a reloaded, changed adapter is a
// different adapter everywhere downstream.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"

namespace loradesk::lora {

enum class Residency {
    ready,    // in a device slot now; `slot` is valid for this step
    loading,  // still on its way (disk read or host->device copy); try again next step
    failed,   // could not be loaded; `error` says why (the requests for it should fail)
};

struct SlotGrant {
    Residency state = Residency::loading;
    int slot = 0;  // >= 1 when ready
    std::string error;
    ErrorCode error_code = ErrorCode::internal;  // when failed
};

class AdapterResidency {
  public:
    virtual ~AdapterResidency() = default;

    // Number of device slots (= max distinct adapters in one step).
    virtual int n_slots() const = 0;

    // Starts moving the adapter towards the device (disk -> host on the prefetch pool). Non-blocking,
    // idempotent. Called when a request for it is admitted, so disk reads overlap running batches.
    virtual void prefetch(const std::string& digest) = 0;

    // For one step: places every adapter of `digests` (distinct, at most n_slots) in a device slot when
    // its host copy is ready, evicting least-recently-used unpinned adapters that are not in `digests`.
    // Non-blocking; returns one grant per digest, in order. Slots granted stay valid until the next call.
    virtual std::vector<SlotGrant> acquire_slots(const std::vector<std::string>& digests) = 0;
};

}  // namespace loradesk::lora
