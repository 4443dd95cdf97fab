// Pieces `loradeskd bench` and its cold-adapter mode (bench_cold_adapter.cpp) share: the runner wrapper that
// takes one greedy step (argmax on the device for CUDA), list parsing, output lines, runner creation, prompts.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "runtime/model_runner.h"
#include "runtime/sequence_driver.h"
#ifdef LORADESK_HAS_CUDA_RUNNER
#include "runtime/cuda/cuda_runner.h"
#endif

namespace loradesk::bench {

struct BenchRunner {
    std::unique_ptr<runtime::ModelRunner> owner;
    runtime::ModelRunner* runner = nullptr;
#ifdef LORADESK_HAS_CUDA_RUNNER
    runtime::cuda::CudaRunner* cuda = nullptr;
#endif
    int vocab = 0;
    double copy_gbps = 0;  // measured device copy bandwidth (CUDA), 0 on the CPU

    // One step; returns the greedy token of each logits row. Throws on a non-finite logit (CPU path).
    std::vector<int32_t> step(runtime::SequenceDriver& d, const std::vector<runtime::SequenceDriver::Work>& w);
};

// --device cpu|cuda|auto from args; CUDA runners are planned for max_tokens-token batches (--no-graphs honoured).
BenchRunner make_bench_runner(const cli::Args& args, int max_tokens);

std::vector<int> parse_list(const std::string& s, const char* what);
void emit(bool json, const nlohmann::json& j, const std::string& text);
// The synthetic prompt every bench (and bench/hf_bench.py) uses.
std::vector<int32_t> bench_prompt(int len, int vocab_size);

// Adds B base sequences of the bench prompt to d and prefills them in chunks of at most max_tokens tokens;
// returns each sequence's first generated token.
std::vector<int32_t> prefill_sequences(BenchRunner& b, runtime::SequenceDriver& d,
                                       std::vector<runtime::SequenceDriver::Work>& work, const std::vector<int>& slots,
                                       int prompt_len, int max_tokens);

}  // namespace loradesk::bench
