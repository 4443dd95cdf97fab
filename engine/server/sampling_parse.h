// The sampling and stopping fields of a generation request, validated in one place for every endpoint that
// generates (/v1/chat/completions and /v1/completions share them; another API's options map onto the same
// names). Every field is range-checked; lists that each choice copies are capped, since prompts x n choices
// (and the engine, once more) each carry their own copy.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "api/engine.h"

namespace loradesk::server {

constexpr std::size_t kMaxLogitBias = 300;                    // entries; OpenAI refuses more than 300 as well
constexpr std::size_t kMaxStopStrings = 256;                  // OpenAI allows 4, Continue sends longer lists
constexpr std::size_t kMaxStopBytes = std::size_t(64) << 10;  // all stop strings together
constexpr std::size_t kMaxStopTokenIds = 1024;

// temperature, top_p, top_k, min_p, presence/frequency/repetition penalties, seed, logit_bias.
void parse_sampling(const nlohmann::json& body, api::SamplingParams& s);
// stop, stop_token_ids, ignore_eos, include_stop_str_in_output (not max_tokens: it has an endpoint default).
void parse_stop(const nlohmann::json& body, api::StopParams& stop);

}  // namespace loradesk::server
