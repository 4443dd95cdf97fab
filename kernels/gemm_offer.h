// Which of cuBLASLt's algorithm offers a tuned GEMM keeps (bf16_gemm.h), as a plain function so that the choice is
// tested without a GPU. Private to kernels/ and its tests.
#pragma once

namespace loradesk::kernels {

// Offers within this share of the fastest count as tied, and a tie goes to the heuristic's first offer: timings of
// nearly equal algorithms swap from run to run, and the choice decides the rounding of every projection, so a restart
// should not change it for a percent.
constexpr float kGemmOfferMargin = 0.03f;

// The offer to keep given each offer's measured time (us[i] <= 0: the offer failed or was not timed): the fastest,
// unless offer 0 is within kGemmOfferMargin of it; -1 when none was timed.
inline int pick_gemm_offer(const float* us, int n) {
    int best = -1;
    for (int i = 0; i < n; ++i)
        if (us[i] > 0.0f && (best < 0 || us[i] < us[best])) best = i;
    if (best > 0 && us[0] > 0.0f && us[0] <= us[best] * (1.0f + kGemmOfferMargin)) return 0;
    return best;
}

}  // namespace loradesk::kernels
