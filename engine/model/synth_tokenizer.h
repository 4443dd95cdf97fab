// A small but complete byte-level BPE tokenizer for synthetic checkpoints: GPT-2 byte map, merges
// learned deterministically from a built-in English text, Qwen-style pre-tokenizer, ChatML special
// tokens and chat template. Real tokenizer files load the same way, so tests exercise real paths.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace loradesk::model {

struct SynthTokenizer {
    nlohmann::json tokenizer;         // tokenizer.json
    nlohmann::json tokenizer_config;  // tokenizer_config.json
    int n_tokens = 0;                 // max id + 1
    int bos_id = -1;                  // <|endoftext|>
    int eos_id = -1;                  // <|im_end|>
};

// n_merges: how many merges to learn (fewer if the text runs out of repeated pairs).
SynthTokenizer make_synth_tokenizer(int n_merges = 320);

// GPT-2 bytes_to_unicode(): the printable code point (as UTF-8) standing for each byte.
std::string byte_level_char(unsigned char byte);

}  // namespace loradesk::model
