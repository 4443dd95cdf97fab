// SiLU(g) * u in f32, the one expression of every kernel that applies the SwiGLU (silu_mul, and the gate|up expand
// with the SwiGLU as its epilogue, sgmv_expand_swiglu), so that they round alike. Private to kernels/.
#pragma once

namespace loradesk::kernels::detail {

__device__ __forceinline__ float swiglu(float g, float u) { return g / (1.0f + expf(-g)) * u; }

}  // namespace loradesk::kernels::detail
