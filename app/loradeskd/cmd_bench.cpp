// loradeskd bench: prefill and decode throughput of a runner on a batch of identical synthetic
// prompts. Checks the outputs first (finite, and identical sequences agree) so a broken runner
// cannot report a speed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/error.h"
#include "runtime/cpu/runner_factory.h"
#include "runtime/cpu/sequence_driver.h"

namespace {

using namespace loradesk;
using Clock = std::chrono::steady_clock;

void check_rows(const std::vector<float>& logits, int vocab, int batch, const char* phase) {
    for (float v : logits)
        if (!std::isfinite(v)) throw_error(ErrorCode::internal, std::string("bench: non-finite logit after ") + phase);
    for (int b = 1; b < batch; ++b)
        for (int i = 0; i < vocab; ++i) {
            const float a = logits[std::size_t(i)], x = logits[std::size_t(b) * vocab + i];
            if (std::fabs(a - x) > 1e-4f * (1.0f + std::fabs(a)))
                throw_error(ErrorCode::internal, std::string("bench: identical sequences disagree after ") + phase);
        }
}

int run_bench(const cli::Args& args) {
    const int prompt_len = int(args.get_int("prompt-len", 128));
    const int new_tokens = int(args.get_int("new-tokens", 32));
    const int batch = int(args.get_int("batch", 1));
    if (prompt_len < 1 || new_tokens < 1 || batch < 1)
        throw_expected(ErrorCode::invalid_argument, "--prompt-len, --new-tokens and --batch must be at least 1");
    auto runner = runtime::create_runner(args.get("device", "cpu"), args.require("model"), int(args.get_int("threads", 0)));
    const model::ModelConfig& c = runner->config();
    const int vocab = c.vocab_size;
    const int page_size = 16;
    const int pages_per_seq = (prompt_len + new_tokens) / page_size + 1;
    runtime::SequenceDriver driver(*runner, pages_per_seq * batch, page_size);
    std::vector<int32_t> prompt(static_cast<std::size_t>(prompt_len));
    for (int i = 0; i < prompt_len; ++i) prompt[std::size_t(i)] = int32_t((uint32_t(i) * 2654435761u) % uint32_t(std::min(vocab, 4096)));
    std::vector<runtime::SequenceDriver::Work> work;
    for (int b = 0; b < batch; ++b) work.push_back({driver.add_sequence(), prompt});

    std::vector<float> logits;
    auto t0 = Clock::now();
    driver.step(work, false, logits);
    const double prefill_s = std::chrono::duration<double>(Clock::now() - t0).count();
    check_rows(logits, vocab, batch, "prefill");
    double decode_s = 0;
    for (int step = 0; step < new_tokens; ++step) {
        const int32_t tok = int32_t(std::max_element(logits.begin(), logits.begin() + vocab) - logits.begin());
        for (auto& w : work) w.tokens = {tok};
        auto t1 = Clock::now();
        driver.step(work, false, logits);
        decode_s += std::chrono::duration<double>(Clock::now() - t1).count();
        check_rows(logits, vocab, batch, "decode");
    }
    const double prefill_tps = double(batch) * prompt_len / prefill_s;
    const double decode_tps = double(batch) * new_tokens / decode_s;
    if (args.flag("json")) {
        nlohmann::json j = {{"device", runner->device_name()}, {"model", c.architecture_name}, {"prompt_len", prompt_len},
                            {"new_tokens", new_tokens}, {"batch", batch}, {"prefill_tokens_per_s", prefill_tps},
                            {"decode_tokens_per_s", decode_tps}};
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("%s on %s: batch %d, prompt %d, new %d\n", c.architecture_name.c_str(), runner->device_name().c_str(), batch,
                    prompt_len, new_tokens);
        std::printf("prefill: %.1f tokens/s (%.3f s)\ndecode:  %.2f tokens/s (%.3f s, %.1f ms/step)\n", prefill_tps, prefill_s,
                    decode_tps, decode_s, 1000.0 * decode_s / new_tokens);
    }
    return 0;
}

LORADESK_COMMAND({"bench", "prefill and decode throughput of a runner",
                  "loradeskd bench --model DIR [--device cpu] [--prompt-len N] [--new-tokens N] [--batch B]",
                  {{"model", "DIR", "Hugging Face model directory"},
                   {"device", "DEV", "cpu (default) or auto"},
                   {"prompt-len", "N", "prompt tokens per sequence (default 128)"},
                   {"new-tokens", "N", "decode steps (default 32)"},
                   {"batch", "B", "sequences decoded together (default 1)"},
                   {"threads", "N", "CPU threads (0 = all cores)"},
                   {"json", "", "print a JSON summary"}},
                  &run_bench});

}  // namespace
