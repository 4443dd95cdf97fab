// A GemvCase's LoRA slices (A and B^T of every slice) copied to the device, with the pointer lists that
// GemvParams takes. Shared by the CUDA GEMV tests; needs the CUDA runtime (device_buffer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "device_buffer.h"
#include "gemv_case.h"

namespace loradesk::kernels::test {

struct DeviceLoraSlices {
    DeviceLoraSlices(const GemvCase& c, int slices) {
        for (int j = 0; j < slices; ++j) {
            m_buffers.push_back(std::make_unique<DeviceBuffer<uint16_t>>(c.a[std::size_t(j)]));
            a.push_back(m_buffers.back()->get());
            m_buffers.push_back(std::make_unique<DeviceBuffer<uint16_t>>(c.bt[std::size_t(j)]));
            bt.push_back(m_buffers.back()->get());
        }
    }

    std::vector<const uint16_t*> a, bt;  // [slices] device pointers

  private:
    std::vector<std::unique_ptr<DeviceBuffer<uint16_t>>> m_buffers;
};

}  // namespace loradesk::kernels::test
