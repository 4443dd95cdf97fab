// libFuzzer target: the safetensors reader (engine/model/safetensors) on arbitrary file bytes: header length,
// header JSON, dtypes, shapes, data_offsets and truncated data sections. The input is the whole file; it goes
// through a memfd so the production path (open + mmap) runs unchanged.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "fuzz_check.h"
#include "model/safetensors.h"

namespace {

using namespace loradesk;

constexpr std::size_t kMaxInput = 65536;
constexpr std::size_t kMaxConvertBytes = 1 << 20;

const std::string& memfd_path() {
    static const std::string path = [] {
        int fd = memfd_create("fuzz_safetensors", MFD_CLOEXEC);
        FUZZ_CHECK(fd >= 0);
        return "/proc/self/fd/" + std::to_string(fd);
    }();
    return path;
}

void write_file(const uint8_t* data, std::size_t size) {
    static const int fd = std::atoi(memfd_path().c_str() + std::strlen("/proc/self/fd/"));
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == ssize_t(size));
}

// What a successfully parsed file promises its users (adapter_loader, model_weights): every view lies inside
// the file and holds exactly numel * dtype_size bytes.
void check_tensors(const model::SafetensorsFile& f, const uint8_t* file_begin, std::size_t file_size) {
    for (const model::TensorView& t : f.tensors()) {
        FUZZ_CHECK(f.find(t.name) == &t);
        int64_t numel = 1;
        for (int64_t d : t.shape) {
            FUZZ_CHECK(d >= 0);
            FUZZ_CHECK(d == 0 || numel <= INT64_MAX / d);
            numel *= d;
        }
        FUZZ_CHECK(numel == t.numel());
        FUZZ_CHECK(uint64_t(numel) <= UINT64_MAX / dtype_size(t.dtype));
        FUZZ_CHECK(uint64_t(numel) * dtype_size(t.dtype) == t.nbytes);
        FUZZ_CHECK(t.nbytes <= file_size);
        (void)t.shape_string();
        if (is_float_dtype(t.dtype) && t.nbytes <= kMaxConvertBytes) {
            std::vector<float> v = t.to_f32();
            FUZZ_CHECK(v.size() == std::size_t(numel));
        }
    }
    (void)file_begin;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size > kMaxInput) return -1;
    write_file(data, size);
    try {
        model::SafetensorsFile f(memfd_path());
        check_tensors(f, data, size);
    } catch (const ExpectedError&) {
        // Refusing a malformed file with a message is the expected outcome.
    }
    return 0;
}
