// The request-body parser with its depth limit and the typed field readers; see json_fields.h.
#include "server/json_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "server/api_error.h"

namespace loradesk::server {

using nlohmann::json;

namespace {

// The longest string literal in a JSON text, in raw bytes (escapes counted as written), or where one first runs
// past `limit`. A linear scan: no allocation, and far cheaper than building a string the request cannot use.
std::size_t first_string_over(const std::string& text, std::size_t limit) {
    bool in_string = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (!in_string) {
            if (c == '"') in_string = true, start = i + 1;
            continue;
        }
        if (c == '\\') {
            ++i;  // the escaped character (a \uXXXX's digits are plain characters to this scan)
        } else if (c == '"') {
            in_string = false;
        }
        if (i - start > limit) return i - start;
    }
    return 0;
}

}  // namespace

nlohmann::ordered_json parse_ordered_fields(const std::string& body, std::span<const std::string_view> names) {
    using ojson = nlohmann::ordered_json;
    bool keep = false;
    const ojson::parser_callback_t only = [&](int depth, ojson::parse_event_t event, ojson& parsed) {
        if (event == ojson::parse_event_t::key && depth == 1) {
            keep = false;
            for (std::string_view n : names) keep = keep || parsed == n;
            return keep;
        }
        return depth == 0 || keep;
    };
    ojson parsed = ojson::parse(body, only, false);
    return parsed.is_object() ? parsed : ojson::object();
}

json parse_json_body(const std::string& body, const BodyLimits& limits) {
    const std::size_t max_string_bytes = limits.max_string_bytes;
    // Refused before parsing: the parser would copy such a string twice (its token buffer, then the value), so a
    // 30 MB prompt cost 126 MB before the prompt-size check could see it.
    if (max_string_bytes > 0 && first_string_over(body, max_string_bytes) > 0)
        throw_invalid("", fmt::format("the request body holds a string longer than {} bytes, the most a prompt may "
                                      "take with this model's context; send a shorter prompt",
                                      max_string_bytes));
    // The callback sees each container open with the number of containers around it, before it is built, and
    // each key and value as it is read.
    std::size_t n_values = 0, n_keys = 0, n_prompts = 0;
    bool in_prompt = false;  // inside the top-level "prompt" value
    const json::parser_callback_t limit = [&](int depth, json::parse_event_t event, json& parsed) {
        using E = json::parse_event_t;
        const bool opens = event == E::object_start || event == E::array_start;
        if (event == E::key && depth == 1) in_prompt = parsed == "prompt";
        // A batch of prompts is strings or token-id lists; counted as they arrive, so that 300 prompts are refused
        // after the 65th instead of after all of them are built (the DOM alone doubled the body's size).
        if (in_prompt && depth == 2 && (event == E::array_start || (event == E::value && parsed.is_string())) &&
            limits.max_prompts > 0 && ++n_prompts > limits.max_prompts)
            throw_invalid("prompt", fmt::format("at most {} prompts per request", limits.max_prompts));
        if (opens && depth >= kMaxJsonDepth)
            throw_invalid("",
                          fmt::format("the request body nests JSON deeper than {} levels; flatten it", kMaxJsonDepth));
        if ((opens || event == E::value) && ++n_values > kMaxJsonValues)
            throw_invalid("", fmt::format("the request body has more than {} JSON values; send less", kMaxJsonValues));
        if (event == E::key && ++n_keys > kMaxJsonKeys)
            throw_invalid("",
                          fmt::format("the request body has more than {} JSON object keys; send fewer", kMaxJsonKeys));
        return true;
    };
    json parsed = json::parse(body, limit, false);
    if (parsed.is_discarded())
        throw_invalid("",
                      "the request body is not valid JSON (send Content-Type: application/json with a JSON object)");
    if (!parsed.is_object()) throw_invalid("", "the request body must be a JSON object");
    return parsed;
}

const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

bool get_bool(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw_invalid(name, fmt::format("'{}' must be a boolean (true or false)", name));
    return v->get<bool>();
}

double get_number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw_invalid(name, fmt::format("'{}' must be a number", name));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw_invalid(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
    return x;
}

int64_t as_integer(const json& v, const std::string& name) {
    constexpr auto kMax = std::numeric_limits<int64_t>::max();
    // is_number_integer() is true for unsigned values too, and get<int64_t>() of 2^64-1 is -1: check these first.
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > uint64_t(kMax))
            throw_invalid(name, fmt::format("'{}' is out of range: {} is larger than {}", name, u, kMax));
        return int64_t(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        // Floats are exact integers only below 2^53; larger ones (1e20) are out of range, not truncated.
        if (std::isfinite(d) && d == std::floor(d)) {
            if (std::fabs(d) < 9e15) return int64_t(d);
            throw_invalid(name, fmt::format("'{}' is out of range: {} is not an integer below 2^53", name, d));
        }
    }
    throw_invalid(name, fmt::format("'{}' must be an integer", name));
}

std::optional<int64_t> get_int(const json& body, const char* name, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    const int64_t x = as_integer(*v, name);
    if (x < lo || x > hi) throw_invalid(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
    return x;
}

std::string require_string(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
        throw_invalid(name, fmt::format("'{}' is required and must be a non-empty string", name));
    return it->get<std::string>();
}

std::vector<int32_t> token_ids(const json& v, const std::string& name, std::size_t max_count) {
    if (!v.is_array()) throw_invalid(name, fmt::format("'{}' must be an array of token ids", name));
    if (v.size() > max_count)
        throw_invalid(name, fmt::format("'{}' has {} token ids; at most {} are allowed", name, v.size(), max_count));
    std::vector<int32_t> ids;
    ids.reserve(v.size());
    for (const json& t : v) {
        const int64_t id = as_integer(t, name);
        if (id < 0 || id > std::numeric_limits<int32_t>::max())
            throw_invalid(name, fmt::format("'{}' contains the token id {}, which is out of range", name, id));
        ids.push_back(int32_t(id));
    }
    return ids;
}

}  // namespace loradesk::server
