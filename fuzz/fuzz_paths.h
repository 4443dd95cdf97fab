// Where the fuzz targets find the repository's data (the demo tokenizer, the committed chat templates):
// $LORADESK_SOURCE_DIR when set (prebuilt binaries run in another checkout, scripts/fuzz.sh sets it), else the
// source tree the binary was built from.
#pragma once

#include <cstdlib>
#include <string>

inline std::string fuzz_source_path(const std::string& relative) {
    const char* env = std::getenv("LORADESK_SOURCE_DIR");
    return std::string(env && *env ? env : LORADESK_SOURCE_DIR) + "/" + relative;
}
