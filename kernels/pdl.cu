// The process-wide switch for programmatic dependent launch (launch_pdl.cuh).
#include <atomic>

#include "launch_pdl.cuh"
#include "launchers.h"

namespace loradesk::kernels {
namespace {
std::atomic<bool> g_pdl{true};
}

bool detail::pdl_enabled() { return g_pdl.load(std::memory_order_relaxed); }

void set_programmatic_dependent_launch(bool on) { g_pdl.store(on, std::memory_order_relaxed); }

}  // namespace loradesk::kernels
