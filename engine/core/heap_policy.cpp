// The malloc policy; see heap_policy.h.
#include "core/heap_policy.h"

#include <cstddef>  // pulls in <features.h>, which defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace loradesk {

void keep_freed_heap() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace loradesk
