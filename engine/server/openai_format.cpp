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

namespace {

struct LegacyArrays {
    ojson tokens = ojson::array(), token_logprobs = ojson::array(), top = ojson::array(), offsets = ojson::array();

    void add(const api::TokenLogprob& lp, std::size_t& offset, bool with_top, int top_k, bool scored) {
        tokens.push_back(lp.chosen.token);
        token_logprobs.push_back(scored ? ojson(lp.chosen.logprob) : ojson(nullptr));
        if (with_top && scored) {
            ojson alts = ojson::object();
            for (std::size_t i = 0; i < lp.top.size() && int(i) < top_k; ++i) alts[lp.top[i].token] = lp.top[i].logprob;
            if (!alts.contains(lp.chosen.token)) alts[lp.chosen.token] = lp.chosen.logprob;
            top.push_back(std::move(alts));
        } else {
            top.push_back(nullptr);
        }
        offsets.push_back(offset);
        offset += lp.chosen.token.size();
    }
    ojson json() && {
        ojson out;
        out["tokens"] = std::move(tokens);
        out["token_logprobs"] = std::move(token_logprobs);
        out["top_logprobs"] = std::move(top);
        out["text_offset"] = std::move(offsets);
        return out;
    }
};

}  // namespace

ojson legacy_logprobs_json(const std::vector<api::TokenLogprob>& logprobs, std::size_t offset, bool with_top) {
    LegacyArrays a;
    for (const api::TokenLogprob& lp : logprobs) a.add(lp, offset, with_top, int(lp.top.size()), true);
    return std::move(a).json();
}

ojson legacy_prompt_logprobs_json(const std::vector<api::TokenLogprob>& prompt, int top_k, bool with_top) {
    LegacyArrays a;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < prompt.size(); ++i) a.add(prompt[i], offset, with_top, top_k, i > 0);
    return std::move(a).json();
}

void append_legacy_logprobs(ojson& into, const ojson& more) {
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
        for (const ojson& v : more[key]) into[key].push_back(v);
}

ojson vllm_prompt_logprobs_json(const std::vector<api::TokenLogprob>& prompt, int top_k) {
    ojson out = ojson::array();
    for (std::size_t i = 0; i < prompt.size(); ++i) {
        if (i == 0) {
            out.push_back(nullptr);
            continue;
        }
        const api::TokenLogprob& lp = prompt[i];
        ojson entries = ojson::object();
        auto entry = [](float logprob, int rank, const std::string& text) {
            ojson e;
            e["logprob"] = logprob;
            e["rank"] = rank;
            e["decoded_token"] = text;
            return e;
        };
        entries[std::to_string(lp.chosen.token_id)] = entry(lp.chosen.logprob, lp.rank, lp.chosen.token);
        for (std::size_t k = 0; k < lp.top.size() && int(k) < top_k; ++k) {
            const std::string key = std::to_string(lp.top[k].token_id);
            if (!entries.contains(key)) entries[key] = entry(lp.top[k].logprob, int(k) + 1, lp.top[k].token);
        }
        out.push_back(std::move(entries));
    }
    return out;
}

std::string finish_reason_name(api::FinishReason reason) {
    switch (reason) {
        case api::FinishReason::stop:
            return "stop";
        case api::FinishReason::length:
            return "length";
        case api::FinishReason::cancelled:
            return "abort";
    }
    return "stop";
}

}  // namespace loradesk::server
