// OpenAI response pieces; see openai_format.h.
#include "server/openai_format.h"

#include <chrono>
#include <random>

namespace loradesk::server {

std::string new_response_id(const std::string& prefix) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<int> pick(0, int(sizeof(kAlphabet)) - 2);
    std::string id = prefix;
    for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng)];
    return id;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string dump_json(const ojson& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ojson usage_json(const api::Usage& usage) {
    ojson u;
    u["prompt_tokens"] = usage.prompt_tokens;
    u["completion_tokens"] = usage.completion_tokens;
    u["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
    u["prompt_tokens_details"] = ojson{{"cached_tokens", usage.cached_tokens}};
    return u;
}

static ojson token_bytes(const std::string& token) {
    ojson bytes = ojson::array();
    for (unsigned char c : token) bytes.push_back(int(c));
    return bytes;
}

ojson chat_logprobs_json(const std::vector<api::TokenLogprob>& logprobs) {
    ojson content = ojson::array();
    for (const api::TokenLogprob& lp : logprobs) {
        ojson entry;
        entry["token"] = lp.chosen.token;
        entry["logprob"] = lp.chosen.logprob;
        entry["bytes"] = token_bytes(lp.chosen.token);
        ojson top = ojson::array();
        for (const api::TopLogprob& t : lp.top) {
            ojson alt;
            alt["token"] = t.token;
            alt["logprob"] = t.logprob;
            alt["bytes"] = token_bytes(t.token);
            top.push_back(std::move(alt));
        }
        entry["top_logprobs"] = std::move(top);
        content.push_back(std::move(entry));
    }
    ojson out;
    out["content"] = std::move(content);
    out["refusal"] = nullptr;
    return out;
}

ojson legacy_logprobs_json(const std::vector<api::TokenLogprob>& logprobs, std::size_t offset, bool with_top) {
    ojson tokens = ojson::array(), token_logprobs = ojson::array(), top = ojson::array(), offsets = ojson::array();
    for (const api::TokenLogprob& lp : logprobs) {
        tokens.push_back(lp.chosen.token);
        token_logprobs.push_back(lp.chosen.logprob);
        if (with_top) {
            ojson alts = ojson::object();
            for (const api::TopLogprob& t : lp.top) alts[t.token] = t.logprob;
            top.push_back(std::move(alts));
        } else {
            top.push_back(nullptr);
        }
        offsets.push_back(offset);
        offset += lp.chosen.token.size();
    }
    ojson out;
    out["tokens"] = std::move(tokens);
    out["token_logprobs"] = std::move(token_logprobs);
    out["top_logprobs"] = std::move(top);
    out["text_offset"] = std::move(offsets);
    return out;
}

std::string finish_reason_name(api::FinishReason reason) {
    switch (reason) {
        case api::FinishReason::stop: return "stop";
        case api::FinishReason::length: return "length";
        case api::FinishReason::cancelled: return "abort";
    }
    return "stop";
}

}  // namespace loradesk::server
