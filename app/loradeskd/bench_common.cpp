// Shared `loradeskd bench` pieces: runner creation (CUDA with the copy-bandwidth probe, else the runner
// factory), one greedy step, option lists, output lines, the synthetic prompt and chunked prefill.
#include "bench_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "engine_cli.h"
#include "runtime/factory/runner_factory.h"

namespace loradesk::bench {

std::vector<int32_t> BenchRunner::step(runtime::SequenceDriver& d,
                                       const std::vector<runtime::SequenceDriver::Work>& w) {
    std::vector<int32_t> tokens;
#ifdef LORADESK_HAS_CUDA_RUNNER
    if (cuda) {
        cuda->forward_greedy(d.build(w, false), tokens);
        return tokens;
    }
#endif
    std::vector<float> logits;
    d.step(w, false, logits);
    for (float v : logits)
        if (!std::isfinite(v)) throw_error(ErrorCode::internal, "bench: non-finite logit");
    for (std::size_t r = 0; r < w.size(); ++r) {
        auto row = logits.begin() + std::ptrdiff_t(r) * vocab;
        tokens.push_back(int32_t(std::max_element(row, row + vocab) - row));
    }
    return tokens;
}

BenchRunner make_bench_runner(const cli::Args& args, int max_tokens) {
    BenchRunner b;
    const std::string device = args.get("device", "cpu");
#ifdef LORADESK_HAS_CUDA_RUNNER
    if (device == "cuda") {
        runtime::cuda::CudaRunnerOptions o;
        o.max_batch_tokens = std::max(max_tokens, 4096);
        o.cuda_graphs = !args.flag("no-graphs");
        o.skinny_gemm = !args.flag("cublas-only");
        o.programmatic_launch = !args.flag("no-pdl");
        o.lora_beside_base = !args.flag("serial-lora");
        o.quant_lora_delta = !args.flag("quant-lora-fused");
        o.fp8_w8a8 = !args.flag("fp8-weight-only");
        b.copy_gbps = runtime::cuda::measure_copy_bandwidth_gbps();
        auto r = std::make_unique<runtime::cuda::CudaRunner>(cli::model_folder(args), 0, o);
        b.cuda = r.get();
        b.owner = std::move(r);
    }
#else
    (void)max_tokens;
#endif
    if (!b.owner) b.owner = runtime::create_runner(device, cli::model_folder(args), int(args.get_int("threads", 0)));
    b.runner = b.owner.get();
    b.vocab = b.runner->config().vocab_size;
    return b;
}

std::vector<int> parse_list(const std::string& s, const char* what) {
    std::vector<int> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) {
        int v = 0;
        try {
            v = std::stoi(item);
        } catch (const std::exception&) {
            v = 0;
        }
        if (v < 1)
            throw_expected(ErrorCode::invalid_argument,
                           std::string("--") + what + " takes positive integers, like 1,8,32");
        out.push_back(v);
    }
    return out;
}

void emit(bool json, const nlohmann::json& j, const std::string& text) {
    std::printf("%s\n", json ? j.dump().c_str() : text.c_str());
    std::fflush(stdout);
}

std::vector<int32_t> bench_prompt(int len, int vocab_size) {
    std::vector<int32_t> p(static_cast<std::size_t>(len));
    for (int i = 0; i < len; ++i)
        p[std::size_t(i)] = int32_t((uint32_t(i) * 2654435761u) % uint32_t(std::min(vocab_size, 4096)));
    return p;
}

std::vector<int32_t> prefill_sequences(BenchRunner& b, runtime::SequenceDriver& d,
                                       std::vector<runtime::SequenceDriver::Work>& work, const std::vector<int>& slots,
                                       int prompt_len, int max_tokens) {
    work.clear();
    for (int slot : slots) work.push_back({d.add_sequence(slot), bench_prompt(prompt_len, b.vocab)});
    std::vector<int32_t> tokens;
    for (std::size_t first = 0; first < work.size();) {  // prefill in chunks within the token budget
        std::size_t last = first;
        int tok = 0;
        while (last < work.size() && (last == first || tok + prompt_len <= max_tokens)) tok += prompt_len, ++last;
        std::vector<runtime::SequenceDriver::Work> part(work.begin() + std::ptrdiff_t(first),
                                                        work.begin() + std::ptrdiff_t(last));
        auto t = b.step(d, part);
        tokens.insert(tokens.end(), t.begin(), t.end());
        first = last;
    }
    return tokens;
}

}  // namespace loradesk::bench
