// keep_freed_heap(): the process-wide malloc policy of loradeskd and the desktop app (and of the LoRA load
// benchmark, which measures it). Owns nothing; call once at the start of main(), before threads start.
#pragma once

namespace loradesk {

// Keeps freed heap memory instead of returning it to the kernel: LoRA host copies (hundreds of MB of
// 0.25-1 MB f32 buffers) are loaded and evicted all day, and re-faulting fresh pages made a load ~5x
// slower than reusing the heap (docs/lora-benchmarks.md). Buffers up to 32 MB come from the heap; the
// heap is trimmed only when more than 1 GiB is free at its top. A no-op outside glibc.
void keep_freed_heap();

}  // namespace loradesk
