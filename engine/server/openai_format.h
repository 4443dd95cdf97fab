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
// With with_top, each top_logprobs dict holds the alternatives plus the chosen token, as OpenAI's.
ojson legacy_logprobs_json(const std::vector<api::TokenLogprob>& logprobs, std::size_t offset, bool with_top);
// The same object for an echoed, scored prompt (api::TokenEvent::prompt_logprobs): the first token has
// token_logprobs and top_logprobs null (nothing predicts it), offsets start at 0, at most top_k alternatives.
ojson legacy_prompt_logprobs_json(const std::vector<api::TokenLogprob>& prompt, int top_k, bool with_top);
// Appends the arrays of `more` (a legacy logprobs object) to those of `into`.
void append_legacy_logprobs(ojson& into, const ojson& more);
// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}}, ...], the prompt token first,
// then up to top_k alternatives (ranks 1..top_k).
ojson vllm_prompt_logprobs_json(const std::vector<api::TokenLogprob>& prompt, int top_k);

std::string finish_reason_name(api::FinishReason reason);

}  // namespace loradesk::server
