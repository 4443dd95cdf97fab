// libFuzzer target: adapter_config.json parsing (engine/lora/adapter_config) and PEFT's per-module rules on a
// Llama-shaped module list, which runs the config's regexes (target_modules / exclude_modules strings,
// rank_pattern / alpha_pattern keys, layers_pattern) through engine/lora/peft_regex.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_check.h"
#include "lora/adapter_config.h"

namespace {

using namespace loradesk;

constexpr std::size_t kMaxInput = 8192;

// Module paths as adapter_loader asks about them: base-model projections, plus the shapes a hostile or odd
// checkpoint can present (tensor names come from files too).
const char* const kModules[] = {
    "model.layers.0.self_attn.q_proj",
    "model.layers.1.self_attn.k_proj",
    "model.layers.2.self_attn.v_proj",
    "model.layers.3.self_attn.o_proj",
    "model.layers.10.mlp.gate_proj",
    "model.layers.31.mlp.up_proj",
    "model.layers.7.mlp.down_proj",
    "model.embed_tokens",
    "lm_head",
    "model.layers.99999999999999999999.self_attn.q_proj",
    "model.decoder.layers.5.fc1",
    "q_proj",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size > kMaxInput) return -1;
    const std::string text(reinterpret_cast<const char*>(data), size);
    lora::AdapterConfig c;
    try {
        c = lora::parse_adapter_config(text, "fuzz/adapter_config.json");
    } catch (const ExpectedError&) {
        return 0;
    }
    FUZZ_CHECK(c.r > 0);
    FUZZ_CHECK(std::isfinite(c.lora_alpha));
    for (const char* module : kModules) {
        try {
            if (!c.targets(module)) continue;
            // A targeted module gets a LoRA delta scaled by scale_for: it must be a positive rank and a finite scale.
            FUZZ_CHECK(c.rank_for(module) > 0);
            FUZZ_CHECK(std::isfinite(c.scale_for(module)));
        } catch (const ExpectedError&) {
            // A regex that does not compile is reported when first used.
        }
    }
    return 0;
}
