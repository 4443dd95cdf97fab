// loradeskd generate --requests-file: runs every request of a JSONL file concurrently through the
// real engine (scheduler, prefix cache, adapter tiers) and prints one JSON line per request, in file
// order. The scheduler's end-to-end tests and benchmarks drive the engine through this.
#pragma once

#include "cli.h"

namespace loradesk::cli {

int run_generate_requests(const Args& args);

}  // namespace loradesk::cli
