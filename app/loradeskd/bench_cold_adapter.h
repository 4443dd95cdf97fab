// `loradeskd bench --cold-adapter DIR`: what bringing one adapter from disk onto the device costs the
// requests that are already decoding (issue #9). See bench_cold_adapter.cpp and docs/lora-benchmarks.md.
#pragma once

#include "cli.h"

namespace loradesk::bench {

int run_cold_adapter_bench(const cli::Args& args);

}  // namespace loradesk::bench
