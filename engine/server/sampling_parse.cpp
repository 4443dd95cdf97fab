// Sampling and stop fields of generation requests; see sampling_parse.h.
#include "server/sampling_parse.h"

#include <fmt/format.h>

#include <limits>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace loradesk::server {

using nlohmann::json;

namespace {

// logit_bias keys are stringified token ids: digits only, no sign, no spaces, no exponent.
std::optional<int32_t> token_id_key(const std::string& key) {
    if (key.empty() || key.size() > 10) return std::nullopt;
    int64_t id = 0;
    for (char ch : key) {
        if (ch < '0' || ch > '9') return std::nullopt;
        id = id * 10 + (ch - '0');
    }
    if (id > std::numeric_limits<int32_t>::max()) return std::nullopt;
    return int32_t(id);
}

void parse_logit_bias(const json& v, std::map<int32_t, float>& out) {
    if (!v.is_object()) throw_invalid("logit_bias", "'logit_bias' must be an object {\"token_id\": bias}");
    if (v.size() > kMaxLogitBias)
        throw_invalid("logit_bias",
                      fmt::format("'logit_bias' has {} entries; at most {} are allowed", v.size(), kMaxLogitBias));
    for (const auto& [key, value] : v.items()) {
        const std::optional<int32_t> id = token_id_key(key);
        if (!id) throw_invalid("logit_bias", fmt::format("'logit_bias' key '{}' is not a token id", key));
        if (!value.is_number() || value.get<double>() < -100.0 || value.get<double>() > 100.0)
            throw_invalid("logit_bias",
                          fmt::format("'logit_bias' value for token {} must be a number in [-100, 100]", key));
        out[*id] = value.get<float>();
    }
}

}  // namespace

void parse_sampling(const json& body, api::SamplingParams& s) {
    s.temperature = float(get_number(body, "temperature", 1.0, 0.0, 2.0));
    s.top_p = float(get_number(body, "top_p", 1.0, 0.0, 1.0));
    if (field(body, "top_p") && s.top_p <= 0.0f) throw_invalid("top_p", "'top_p' must be greater than 0 and at most 1");
    s.top_k = int(get_int(body, "top_k", -1, std::numeric_limits<int32_t>::max()).value_or(0));
    if (s.top_k < 0) s.top_k = 0;
    s.min_p = float(get_number(body, "min_p", 0.0, 0.0, 1.0));
    s.presence_penalty = float(get_number(body, "presence_penalty", 0.0, -2.0, 2.0));
    s.frequency_penalty = float(get_number(body, "frequency_penalty", 0.0, -2.0, 2.0));
    s.repetition_penalty = float(get_number(body, "repetition_penalty", 1.0, 0.0, 2.0));
    if (s.repetition_penalty <= 0.0f)
        throw_invalid("repetition_penalty", "'repetition_penalty' must be greater than 0 (1 = off)");
    // Any int64; negative seeds are used as their two's complement (the sampler takes 64 bits).
    if (const json* v = field(body, "seed")) s.seed = uint64_t(as_integer(*v, "seed"));
    if (const json* v = field(body, "logit_bias")) parse_logit_bias(*v, s.logit_bias);
}

void parse_stop(const json& body, api::StopParams& stop) {
    if (const json* v = field(body, "stop")) {
        const char* kForm = "'stop' must be a string or an array of strings";
        std::vector<const json*> items;
        if (v->is_string()) items.push_back(v);
        if (v->is_array())
            for (const json& s : *v) items.push_back(&s);
        if (!v->is_string() && !v->is_array()) throw_invalid("stop", kForm);
        if (items.size() > kMaxStopStrings)
            throw_invalid("stop",
                          fmt::format("'stop' has {} strings; at most {} are allowed", items.size(), kMaxStopStrings));
        // Checked before anything is copied: every choice of the request will carry its own copy.
        std::size_t bytes = 0;
        for (const json* s : items) {
            if (!s->is_string()) throw_invalid("stop", kForm);
            if (s->get_ref<const std::string&>().empty()) throw_invalid("stop", "'stop' strings must not be empty");
            bytes += s->get_ref<const std::string&>().size();
        }
        if (bytes > kMaxStopBytes)
            throw_invalid("stop", fmt::format("'stop' strings have {} bytes together; at most {} are allowed", bytes,
                                              kMaxStopBytes));
        for (const json* s : items) stop.stop.push_back(s->get<std::string>());
    }
    if (const json* v = field(body, "stop_token_ids"))
        stop.stop_token_ids = token_ids(*v, "stop_token_ids", kMaxStopTokenIds);
    stop.ignore_eos = get_bool(body, "ignore_eos", false);
    stop.include_stop_str_in_output = get_bool(body, "include_stop_str_in_output", false);
}

}  // namespace loradesk::server
