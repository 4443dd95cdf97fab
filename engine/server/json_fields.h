// Reading request bodies: the JSON parser with its nesting limit, and typed access to fields under the API's
// rules (absent or null = not given; a wrong type or an out-of-range value is a 400 naming the field). Integers
// are range-checked before any narrowing, so 2^64-1 is "out of range", never -1. Shared by every route.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loradesk::server {

// Deeper JSON is refused while parsing. nlohmann's parser is iterative, but destroying, copying, dumping and
// rendering a value recurse once per level: ~35,000 levels (80 KB) overflow a worker's stack.
constexpr int kMaxJsonDepth = 128;
// More values or object keys are refused while parsing, so the parsed document stays within a few times the size
// of the body: a value costs 16 bytes however short its text ("1,"), an object key ~100 (1 M logit_bias keys in
// 14 MB took 150 MB). 4 M values hold 64 prompts of 64 K token ids; real requests have a few thousand keys.
constexpr std::size_t kMaxJsonValues = std::size_t(4) << 20;
constexpr std::size_t kMaxJsonKeys = 100000;

// Bounds a request body must keep that are known before it is parsed (0 = none): refusing while parsing keeps a
// hostile body from costing more than about its own size.
struct BodyLimits {
    std::size_t max_string_bytes = 0;  // any string, as written (escapes included)
    std::size_t max_prompts = 0;       // entries of a top-level "prompt" list (strings or token-id lists)
};

// Parses a request body as a JSON object: 400 when it is not JSON, not an object, nests deeper than
// kMaxJsonDepth, has more than kMaxJsonValues values or kMaxJsonKeys keys, or breaks `limits`.
nlohmann::json parse_json_body(const std::string& body, const BodyLimits& limits = {});

// Only the top-level fields `names` of a body that parse_json_body accepted, parsed again keeping the client's key
// order (nlohmann::json sorts keys): JSON Schemas list properties in the order the output should have them, and
// chat templates render tools with tojson. Other fields are skipped as they are read, so a large prompt costs no
// second copy. Empty object when none is present.
nlohmann::ordered_json parse_ordered_fields(const std::string& body, std::span<const std::string_view> names);

// The field, or nullptr when absent or null (clients send explicit nulls for optional fields).
const nlohmann::json* field(const nlohmann::json& body, const char* name);

bool get_bool(const nlohmann::json& body, const char* name, bool fallback);
// A finite number in [lo, hi].
double get_number(const nlohmann::json& body, const char* name, double fallback, double lo, double hi);
// An integer (or a float with an integral value below 2^53) in the int64 range; 400 naming `name` otherwise.
int64_t as_integer(const nlohmann::json& v, const std::string& name);
// An integer in [lo, hi].
std::optional<int64_t> get_int(const nlohmann::json& body, const char* name, int64_t lo, int64_t hi);
// A non-empty string; 400 when absent, empty or not a string.
std::string require_string(const nlohmann::json& body, const char* name);
// An array of at most `max_count` token ids, each in [0, 2^31).
std::vector<int32_t> token_ids(const nlohmann::json& v, const std::string& name, std::size_t max_count);

}  // namespace loradesk::server
