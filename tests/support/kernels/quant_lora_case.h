// A LoRA expand for the quantized kernels' fused epilogue (quant_gemv, quant_mma): three slices of a 256-column
// site (offsets 0 / 64 / 192), two adapter slots, one of which leaves slice 2 alone (rank 0), a precomputed xa
// and segments that put tokens on adapters and on the base. The same SgmvParams on the host (for the twin) and
// on the device. Given the input width k, also each slice's A for a shrink over k (lora_shrink); the device xa then
// starts as NaN, so that only what the kernel writes can be read. max_rank sizes xa rows and A / B^T slots (the
// kernels' paths for ranks over 64); the slots' ranks stay at most 16.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "device_buffer.h"
#include "kernel_params.h"
#include "kernel_test_util.h"

namespace loradesk::kernels::test {

struct QuantLoraCase {
    static constexpr int kSiteColumns = 256, kMaxRank = 16, kSlots = 2;
    static constexpr int kOffsets[3] = {0, 64, 192}, kFeatures[3] = {64, 128, 64};
    // Slot 1 leaves slice 2 alone (rank 0); slot 2 adapts every slice at full rank.
    const std::vector<std::vector<int32_t>> ranks{{0, 8, 16}, {0, 5, 16}, {0, 0, 16}};
    const std::vector<std::vector<float>> scales{{0.f, 0.5f, 0.25f}, {0.f, 2.f, 1.5f}, {0.f, 1.f, 0.75f}};
    const int max_rank;
    std::vector<float> xa;
    std::vector<std::vector<uint16_t>> bt, a;
    std::vector<int32_t> indptr, seg_slots;

    // Segments of 1 and 2 tokens alternating. 1 token: slot 2; 2 tokens: slots 1, 2 (base_first: 0, 1); more:
    // slots 1, 0, 2 repeated (base_first: 0, 2, 1).
    QuantLoraCase(std::mt19937& rng, int tokens, bool base_first, int k = 0, int max_rank_ = kMaxRank)
        : max_rank(max_rank_), stride(int64_t(max_rank_) * std::max(128, k)) {
        std::normal_distribution<float> nd(0.f, 1.f);
        xa.resize(std::size_t(tokens) * 3 * max_rank);
        for (auto& v : xa) v = nd(rng);
        for (int j = 0; j < 3; ++j) bt.push_back(random_bf16(rng, std::size_t(kSlots * slot_stride())));
        const float a_range = k > 0 ? 3.f / std::sqrt(float(k)) : 0.f;  // x . A about as large as the random xa
        for (int j = 0; k > 0 && j < 3; ++j)
            a.push_back(random_bf16(rng, std::size_t(kSlots * slot_stride()), -a_range, a_range));
        const std::vector<int32_t> cycle =
            tokens == 1   ? std::vector<int32_t>{2}
            : tokens == 2 ? (base_first ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{1, 2})
                          : (base_first ? std::vector<int32_t>{0, 2, 1} : std::vector<int32_t>{1, 0, 2});
        indptr.push_back(0);
        for (int t = 0, len = 1; t < tokens; t += len, len = 3 - len) {
            seg_slots.push_back(cycle[seg_slots.size() % cycle.size()]);
            indptr.push_back(std::min(tokens, t + len));
        }
        upload();
    }

    int64_t slot_stride() const { return stride; }

    SgmvParams params(bool device) const {
        SgmvParams l;
        l.xa = device ? d_xa->get() : const_cast<float*>(xa.data());
        l.seg_indptr = device ? d_indptr->get() : indptr.data();
        l.seg_slot = device ? d_slots->get() : seg_slots.data();
        l.n_segs = int(seg_slots.size()), l.max_seg_len = 2, l.max_rank = max_rank, l.slot_stride = slot_stride();
        l.n_slices = 3;
        for (int j = 0; j < 3; ++j) {
            const std::size_t u = std::size_t(j);
            l.slices[j].bt = device ? d_bt[u]->get() : bt[u].data();
            if (!a.empty()) l.slices[j].a = device ? d_a[u]->get() : a[u].data();
            l.slices[j].ranks = device ? d_ranks[u]->get() : ranks[u].data();
            l.slices[j].scales = device ? d_scales[u]->get() : scales[u].data();
            l.slices[j].out_offset = kOffsets[j], l.slices[j].out_features = kFeatures[j];
        }
        return l;
    }

    std::vector<float> device_xa() const { return d_xa->download(); }

  private:
    void upload() {
        d_xa = std::make_unique<DeviceBuffer<float>>(
            a.empty() ? xa : std::vector<float>(xa.size(), std::numeric_limits<float>::quiet_NaN()));
        for (const auto& m : a) d_a.push_back(std::make_unique<DeviceBuffer<uint16_t>>(m));
        d_indptr = std::make_unique<DeviceBuffer<int32_t>>(indptr);
        d_slots = std::make_unique<DeviceBuffer<int32_t>>(seg_slots);
        for (std::size_t j = 0; j < 3; ++j) {
            d_bt.push_back(std::make_unique<DeviceBuffer<uint16_t>>(bt[j]));
            d_ranks.push_back(std::make_unique<DeviceBuffer<int32_t>>(ranks[j]));
            d_scales.push_back(std::make_unique<DeviceBuffer<float>>(scales[j]));
        }
    }
    int64_t stride;
    std::unique_ptr<DeviceBuffer<float>> d_xa;
    std::unique_ptr<DeviceBuffer<int32_t>> d_indptr, d_slots;
    std::vector<std::unique_ptr<DeviceBuffer<uint16_t>>> d_bt, d_a;
    std::vector<std::unique_ptr<DeviceBuffer<int32_t>>> d_ranks;
    std::vector<std::unique_ptr<DeviceBuffer<float>>> d_scales;
};

}  // namespace loradesk::kernels::test
