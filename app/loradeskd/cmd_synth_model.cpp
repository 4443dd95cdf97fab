// loradeskd synth-model: writes a synthetic Hugging Face checkpoint for a preset (tests, benchmarks,
// demos without downloading weights).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/error.h"
#include "model/synth_model.h"

namespace {

using namespace loradesk;

int run_synth_model(const cli::Args& args) {
    model::SynthOptions o;
    o.preset = args.get("preset", "tiny");
    o.out_dir = args.require("out");
    o.seed = uint64_t(args.get_int("seed", 0));
    o.tokenizer_dir = args.get("tokenizer");
    o.quant = args.get("quant");
    const std::string dtype = args.get("dtype", "bf16");
    if (dtype == "bf16")
        o.dtype = DType::bf16;
    else if (dtype == "f16")
        o.dtype = DType::f16;
    else if (dtype == "f32")
        o.dtype = DType::f32;
    else
        throw_expected(ErrorCode::invalid_argument, "--dtype must be bf16, f16 or f32, got '" + dtype + "'");
    model::ModelConfig c = model::synth_model(o);
    if (args.flag("json")) {
        nlohmann::json j = {{"out", o.out_dir}, {"preset", o.preset}, {"config", model::model_config_to_json(c)}};
        std::printf("%s\n", j.dump().c_str());
    } else {
        const std::string quant = c.quant.quantized() ? ", " + model::quant_description(c.quant) : "";
        std::printf("wrote %s (%s, %d layers, hidden %d, vocab %d, %s%s) to %s\n", o.preset.c_str(),
                    c.architecture_name.c_str(), c.n_layers, c.hidden_size, c.vocab_size, dtype.c_str(), quant.c_str(),
                    o.out_dir.c_str());
    }
    return 0;
}

std::string quant_help() {
    std::string s = "quantize the projections in a Hub layout: ";
    for (const std::string& n : model::synth_quant_names()) s += n + " ";
    return s;
}

std::string preset_help() {
    std::string s = "preset: ";
    for (const std::string& n : model::synth_preset_names()) s += n + " ";
    return s;
}

LORADESK_COMMAND({"synth-model",
                  "write a synthetic HF checkpoint (random weights, real shapes)",
                  "loradeskd synth-model --preset NAME --out DIR [--seed N] [--tokenizer DIR] [--dtype bf16|f16|f32] "
                  "[--quant fp8|fp8-tensor|fp8-channel|awq|gptq|gptq-actorder]",
                  {{"preset", "NAME", preset_help()},
                   {"out", "DIR", "output directory (created)"},
                   {"seed", "N", "weight seed (default 0)"},
                   {"tokenizer", "DIR",
                    "copy tokenizer.json/tokenizer_config.json from DIR and fit the vocabulary to it"},
                   {"dtype", "TYPE", "bf16 (default), f16 or f32"},
                   {"quant", "FORMAT", quant_help()},
                   {"json", "", "print a JSON summary"}},
                  &run_synth_model});

}  // namespace
