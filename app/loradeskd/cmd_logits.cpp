// loradeskd logits: runs one prompt through a runner and prints the logits (the HF oracle's input).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "adapter_option.h"
#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "runtime/factory/runner_factory.h"
#include "runtime/sequence_driver.h"

namespace {

using namespace loradesk;

int run_logits(const cli::Args& args) {
    const std::vector<int> ids = cli::parse_int_list(args.require("prompt-ids"), "prompt-ids");
    auto runner =
        runtime::create_runner(args.get("device", "cpu"), cli::model_folder(args), int(args.get_int("threads", 0)));
    const int vocab = runner->config().vocab_size;
    for (int id : ids)
        if (id < 0 || id >= vocab)
            throw_expected(ErrorCode::invalid_argument, "--prompt-ids: token " + std::to_string(id) +
                                                            " is outside the vocabulary (0.." +
                                                            std::to_string(vocab - 1) + ")");
    const int slot = args.has("adapter")
                         ? cli::attach_adapter(*runner, cli::split_adapter_spec(args.get("adapter")).second,
                                               int(args.get_int("max-lora-rank", 256)))
                         : 0;
    const int page_size = 16;
    runtime::SequenceDriver driver(*runner, int(ids.size()) / page_size + 1, page_size);
    const int seq = driver.add_sequence(slot);
    const bool all = args.flag("all-positions");
    std::vector<float> logits;
    driver.step({{seq, std::vector<int32_t>(ids.begin(), ids.end())}}, all, logits);
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t r = 0; r < logits.size() / std::size_t(vocab); ++r)
        rows.push_back(std::vector<float>(logits.begin() + std::ptrdiff_t(r * vocab),
                                          logits.begin() + std::ptrdiff_t((r + 1) * vocab)));
    if (args.flag("json")) {
        std::printf("%s\n", nlohmann::json{{"logits", rows}}.dump().c_str());
    } else {
        for (const auto& row : rows) {
            std::vector<float> v = row.get<std::vector<float>>();
            std::size_t best = std::size_t(std::max_element(v.begin(), v.end()) - v.begin());
            std::printf("argmax %zu  logit %.4f\n", best, double(v[best]));
        }
    }
    return 0;
}

LORADESK_COMMAND({"logits",
                  "print the logits of a prompt (last position, or all)",
                  "loradeskd logits --model DIR [--adapter DIR] --prompt-ids 1,2,3 [--all-positions] [--json]",
                  {{"model", "DIR|ORG/NAME", "Hugging Face model directory, or a Hub id in the Hugging Face cache"},
                   {"prompt-ids", "IDS", "comma-separated token ids"},
                   {"all-positions", "", "a row for every prompt position, not only the last"},
                   {"adapter", "DIR|ID", "apply this PEFT LoRA adapter (folder or Hub id in the Hugging Face cache)"},
                   {"max-lora-rank", "R", "largest adapter rank accepted (default 256)"},
                   {"device", "DEV", "cpu (default) or auto"},
                   {"threads", "N", "CPU threads (0 = all cores)"},
                   {"json", "", "print {\"logits\": [[...], ...]}"}},
                  &run_logits});

}  // namespace
