// loradeskd generate: greedy or sampled continuation of one prompt given as token ids, driving the
// runner directly with a private page table. A scheduler-based --requests-file mode can be added
// next to run_single() without touching it.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "adapter_option.h"
#include "cli.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "engine_cli.h"
#include "generate_requests.h"
#include "runtime/factory/runner_factory.h"
#include "runtime/sampler.h"
#include "runtime/sequence_driver.h"

namespace {

using namespace loradesk;

runtime::SamplingParams sampling_from_args(const cli::Args& args) {
    runtime::SamplingParams p;
    p.temperature = float(args.get_double("temperature", 0.0));
    p.top_p = float(args.get_double("top-p", 1.0));
    p.top_k = int(args.get_int("top-k", 0));
    p.min_p = float(args.get_double("min-p", 0.0));
    p.seed = uint64_t(args.get_int("seed", 0));
    p.repetition_penalty = float(args.get_double("repetition-penalty", 1.0));
    p.presence_penalty = float(args.get_double("presence-penalty", 0.0));
    p.frequency_penalty = float(args.get_double("frequency-penalty", 0.0));
    return p;
}

int run_single(const cli::Args& args) {
    if (args.has("requests-file")) return cli::run_generate_requests(args);
    const std::string model_dir = cli::model_folder(args);
    const std::vector<int> prompt = cli::parse_int_list(args.require("prompt-ids"), "prompt-ids");
    const long long max_tokens = args.get_int("max-tokens", 16);
    if (max_tokens < 1) throw_expected(ErrorCode::invalid_argument, "--max-tokens must be at least 1");
    auto runner = runtime::create_runner(args.get("device", "cpu"), model_dir, int(args.get_int("threads", 0)));
    const model::ModelConfig& c = runner->config();
    if (int64_t(prompt.size()) + max_tokens > c.max_position_embeddings)
        throw_expected(ErrorCode::context_too_long, "prompt + --max-tokens exceed max_position_embeddings (" +
                                                        std::to_string(c.max_position_embeddings) + ")");
    for (int id : prompt)
        if (id < 0 || id >= c.vocab_size)
            throw_expected(ErrorCode::invalid_argument,
                           "--prompt-ids: token " + std::to_string(id) + " is outside the vocabulary");
    runtime::SamplingParams params = sampling_from_args(args);
    params.validate(c.vocab_size);
    const std::set<int> stop = args.flag("ignore-eos") ? std::set<int>{} : [&] {
        auto ids = model::load_eos_token_ids(model_dir, c);
        return std::set<int>(ids.begin(), ids.end());
    }();

    const auto adapters = args.all("adapter");
    if (adapters.size() > 1)
        throw_expected(ErrorCode::invalid_argument,
                       "one prompt takes one --adapter; several adapters need --requests-file");
    const int slot = adapters.empty() ? 0
                                      : cli::attach_adapter(*runner, cli::split_adapter_spec(adapters[0]).second,
                                                            int(args.get_int("max-lora-rank", 256)));
    const int page_size = 16;
    runtime::SequenceDriver driver(*runner, int((int64_t(prompt.size()) + max_tokens) / page_size + 1), page_size);
    const int seq = driver.add_sequence(slot);
    runtime::Sampler sampler(params, prompt);
    std::vector<int> out;
    std::vector<float> logits;
    std::vector<int32_t> next(prompt.begin(), prompt.end());
    std::string finish = "length";
    while (int64_t(out.size()) < max_tokens) {
        driver.step({{seq, next}}, false, logits);
        const int tok = sampler.sample(logits.data(), c.vocab_size).token;
        sampler.accept(tok);
        out.push_back(tok);
        if (stop.count(tok)) {
            finish = "stop";
            break;
        }
        next = {tok};
    }
    if (args.flag("json")) {
        std::printf("%s\n", nlohmann::json{{"output_ids", out}, {"finish_reason", finish}}.dump().c_str());
    } else {
        for (std::size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? "," : "", out[i]);
        std::printf("\nfinish_reason: %s\n", finish.c_str());
    }
    return 0;
}

LORADESK_COMMAND(
    {"generate",
     "continue a prompt of token ids (greedy or sampled)",
     "loradeskd generate --model DIR [--adapter [NAME=]DIR]... (--prompt-ids 1,2,3 | --requests-file F.jsonl) "
     "[--max-tokens N] [sampling options] [--json]",
     {{"model", "DIR|ORG/NAME", "Hugging Face model directory, or a Hub id in the Hugging Face cache"},
      {"prompt-ids", "IDS", "comma-separated token ids"},
      {"max-tokens", "N", "tokens to generate (default 16)"},
      {"temperature", "T", "0 = greedy (default)"},
      {"top-p", "P", "nucleus sampling mass (default 1)"},
      {"top-k", "K", "keep the K most likely tokens (0 = off)"},
      {"min-p", "P", "drop tokens below P * max probability (0 = off)"},
      {"seed", "N", "sampling seed (default 0)"},
      {"repetition-penalty", "R", "HF repetition penalty (default 1)"},
      {"presence-penalty", "X", "OpenAI presence penalty (default 0)"},
      {"frequency-penalty", "X", "OpenAI frequency penalty (default 0)"},
      {"ignore-eos", "", "do not stop at end-of-sequence tokens"},
      {"adapter", "[NAME=]DIR|ID",
       "PEFT LoRA adapter (folder or Hub id in the cache); with --requests-file each request names one", true},
      {"requests-file", "F.jsonl", "run every request of the file concurrently through the scheduler"},
      {"max-lora-rank", "R", "largest adapter rank accepted (default 256)"},
      {"max-loras", "N", "--requests-file: distinct adapters per batch (default 4)"},
      {"kv-memory", "GB", "--requests-file: KV page pool (default 0.25)"},
      {"policy", "fcfs|pack", "--requests-file: scheduling policy (default fcfs)"},
      {"device", "DEV", "cpu (default) or auto"},
      {"threads", "N", "CPU threads (0 = all cores)"},
      {"json", "", "print {\"output_ids\": [...], \"finish_reason\": ...}"}},
     &run_single});

}  // namespace
