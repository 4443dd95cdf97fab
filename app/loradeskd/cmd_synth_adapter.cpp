// loradeskd synth-adapter: writes a PEFT-format LoRA adapter for a base model (tests, benchmarks,
// the PEFT parity oracle). The merged delta is sized relative to the base weights, so the adapter
// visibly changes logits without blowing them up.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "lora/adapter_synth.h"
#include "model/dequantize.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace {

using namespace loradesk;

template <class T>
std::vector<std::pair<std::string, T>> parse_pattern(const std::string& text, const std::string& option) {
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text);
    } catch (const std::exception& e) {
        throw_expected(ErrorCode::invalid_argument, "--" + option + " is not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object())
        throw_expected(ErrorCode::invalid_argument, "--" + option + " must be a JSON object like {\"v_proj\": 4}");
    std::vector<std::pair<std::string, T>> out;
    for (auto& [k, v] : j.items()) {
        if (!v.is_number() || (std::is_same_v<T, int> && !v.is_number_integer()))
            throw_expected(ErrorCode::invalid_argument, "--" + option + ": value of '" + k + "' must be a number");
        out.emplace_back(k, v.template get<T>());
    }
    return out;
}

// Standard deviation of a layer-0 projection of the base (dequantized when the base is quantized), the
// yardstick for the delta's size.
double base_weight_std(const std::string& model_dir, runtime::LoraModule m) {
    const model::ModelWeights weights(model_dir);
    const model::LayerWeights& l = weights.layer(0);
    using M = runtime::LoraModule;
    const std::pair<const model::TensorView*, const model::QuantizedLinear*> p =
        m == M::q      ? std::pair{l.q, l.quant.q}
        : m == M::k    ? std::pair{l.k, l.quant.k}
        : m == M::v    ? std::pair{l.v, l.quant.v}
        : m == M::o    ? std::pair{l.o, l.quant.o}
        : m == M::gate ? std::pair{l.gate, l.quant.gate}
        : m == M::up   ? std::pair{l.up, l.quant.up}
                       : std::pair{l.down, l.quant.down};
    const std::vector<float> w = p.second ? model::dequantize(*p.second) : p.first->to_f32();
    double sum = 0, sq = 0;
    for (float x : w) {
        sum += x;
        sq += double(x) * x;
    }
    double mean = sum / double(w.size());
    return std::sqrt(std::max(0.0, sq / double(w.size()) - mean * mean));
}

int run_synth_adapter(const cli::Args& args) {
    std::string model_dir = cli::model_folder(args);
    model::ModelConfig base = model::load_model_config(model_dir);
    lora::SynthAdapterSpec spec;
    spec.rank = int(args.get_int("rank", 8));
    spec.alpha = args.get_double("alpha", 2.0 * spec.rank);
    spec.rslora = args.flag("rslora");
    if (args.has("targets")) spec.targets = lora::parse_lora_targets(args.get("targets"));
    if (args.has("layers")) spec.layers = cli::parse_int_list(args.get("layers"), "layers");
    spec.seed = uint64_t(args.get_int("seed", 0));
    std::string dtype = args.get("dtype", "f32");
    if (dtype == "f32")
        spec.dtype = DType::f32;
    else if (dtype == "bf16")
        spec.dtype = DType::bf16;
    else
        throw_expected(ErrorCode::invalid_argument, "--dtype must be f32 or bf16, got '" + dtype + "'");
    if (args.has("rank-pattern")) spec.rank_pattern = parse_pattern<int>(args.get("rank-pattern"), "rank-pattern");
    if (args.has("alpha-pattern"))
        spec.alpha_pattern = parse_pattern<double>(args.get("alpha-pattern"), "alpha-pattern");
    spec.base_model = args.get("base-name", model_dir);
    // A delta of ~30% of the base weights' spread moves logits clearly but keeps them in range.
    spec.delta_std = 0.3 * base_weight_std(model_dir, spec.targets.empty() ? runtime::LoraModule::q : spec.targets[0]);
    std::string out = args.require("out");
    lora::synthesize_adapter(base, spec, out);
    std::printf("wrote %s (rank %d, alpha %g%s, %s)\n", out.c_str(), spec.rank, spec.alpha,
                spec.rslora ? ", rsLoRA" : "", dtype.c_str());
    return 0;
}

LORADESK_COMMAND({"synth-adapter",
                  "write a synthetic PEFT LoRA adapter for a base model",
                  "loradeskd synth-adapter --model DIR --rank R --alpha A [--rslora] [--targets q_proj,v_proj] "
                  "[--layers 0,2] [--seed N] [--dtype f32|bf16] [--rank-pattern JSON] [--alpha-pattern JSON] --out DIR",
                  {{"model", "DIR|ORG/NAME",
                    "base model directory (config.json + safetensors), or a Hub id in the Hugging Face cache"},
                   {"rank", "R", "LoRA rank r (default 8)"},
                   {"alpha", "A", "lora_alpha (default 2r)"},
                   {"rslora", "", "use_rslora: scale alpha/sqrt(r) instead of alpha/r"},
                   {"targets", "LIST", "projections to adapt (default all seven)"},
                   {"layers", "LIST", "layers_to_transform (default every layer)"},
                   {"seed", "N", "random seed (default 0)"},
                   {"dtype", "T", "tensor dtype: f32 (default) or bf16"},
                   {"rank-pattern", "JSON", "PEFT rank_pattern, e.g. {\"v_proj\": 4}"},
                   {"alpha-pattern", "JSON", "PEFT alpha_pattern, e.g. {\"down_proj\": 32}"},
                   {"base-name", "NAME", "base_model_name_or_path to record (default: --model)"},
                   {"out", "DIR", "adapter folder to write"}},
                  &run_synth_adapter});

}  // namespace
