// OpenAI response pieces: ids, usage, chat and legacy logprobs, finish reasons. Key order follows the
// OpenAI examples (ordered_json), so responses are byte-stable.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/engine.h"

namespace loradesk::server {

using ojson = nlohmann::ordered_json;

// "chatcmpl-" / "cmpl-" followed by 24 random alphanumerics.
std::string new_response_id(const std::string& prefix);
int64_t unix_now();

// Compact JSON that never throws on bad UTF-8 in token strings (replaced by U+FFFD).
std::string dump_json(const ojson& value);

ojson usage_json(const api::Usage& usage);

// {"content":[{"token","logprob","bytes","top_logprobs":[...]}],"refusal":null}
ojson chat_logprobs_json(const std::vector<api::TokenLogprob>& logprobs);
// {"tokens":[...],"token_logprobs":[...],"top_logprobs":[{tok:lp}|null],"text_offset":[...]}; offsets start at
// `offset` (the length of text already emitted, e.g. an echoed prompt).
ojson legacy_logprobs_json(const std::vector<api::TokenLogprob>& logprobs, std::size_t offset, bool with_top);

std::string finish_reason_name(api::FinishReason reason);

}  // namespace loradesk::server
