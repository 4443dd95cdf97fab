// Pieces of Ollama's wire format (/api/*): RFC 3339 times, keep_alive durations, model names, details and list
// entries, the statistics of a finished generation, tool calls with object arguments, logprobs, and the
// {"error": "..."} body. Pure functions over the facade's types; no engine access, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/engine.h"
#include "server/api_error.h"
#include "server/http_types.h"
#include "server/openai_format.h"

namespace loradesk::server::ollama {

// The Ollama release whose API loradesk speaks. Clients compare it with Ollama's releases to decide which
// features they may use (tools since 0.3, think since 0.9), so it is Ollama's numbering, not loradesk's.
constexpr const char* kApiVersion = "0.12.0";

// "2026-11-23T23:22:24.123456Z": UTC with microseconds, as Ollama writes created_at and modified_at.
std::string rfc3339(std::chrono::system_clock::time_point t);
// The same from seconds since 1970, for times past what system_clock holds (keep_alive forever).
std::string rfc3339_unix(int64_t unix_seconds, int microseconds = 0);

// keep_alive: a Go duration ("5m", "1h30m", "-1m", "0"), a number of seconds, or a string of one.
enum class KeepAlive { unset, keep_loaded, unload, timed };
struct KeepAliveSpec {
    KeepAlive kind = KeepAlive::unset;
    double seconds = 0;  // when timed
};
// Throws ApiError 400 naming keep_alive when the value is neither.
KeepAliveSpec parse_keep_alive(const nlohmann::json& body);

// The name under which /api/tags lists an adapter: "BASE:ADAPTER", as generation accepts it.
std::string adapter_model_name(const api::ModelInfo& model, const std::string& adapter);
// The model family from the architecture ("Qwen3ForCausalLM" -> "qwen3").
std::string family_of(const std::string& architecture);
// "6.1M", "494.0M", "8.0B".
std::string parameter_size(uint64_t parameters);
// Whether the engine runs on the CPU runner (device "cpu (N threads)").
bool on_cpu(const api::ModelInfo& model);
// F32 or BF16 from the bytes per weight (loradesk does not quantize).
std::string quantization_level(const api::ModelInfo& model);
// details: {parent_model, format, family, families, parameter_size, quantization_level}.
ojson model_details(const api::ModelInfo& model, const std::string& parent_model);

// Durations of a finished generation in nanoseconds, from the engine's timings.
struct GenerationTimes {
    std::chrono::steady_clock::time_point started;  // when the HTTP request arrived
    double load_ms = 0;                             // adapter load this request waited for
};
// done, done_reason, total_duration, load_duration, prompt_eval_count/_duration, eval_count/_duration.
void add_final_stats(ojson& body, const api::FinishEvent& finish, const GenerationTimes& times);
std::string done_reason(api::FinishReason reason);

// The chat delta parser's OpenAI tool calls as Ollama's [{"function":{"index","name","arguments":{...}}}].
// A call whose arguments are not a JSON object cannot be written in Ollama's shape: its text is appended to
// `content` as the model wrote it, so nothing is lost.
ojson tool_calls_json(const std::vector<ojson>& openai_calls, std::string& content);

// [{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}]
ojson logprobs_json(const std::vector<api::TokenLogprob>& logprobs);

// {"error": "..."} with the status (and Retry-After) of `error`.
HttpResponse error_response(const ApiError& error);
// The same as one NDJSON line, for errors after the headers of a stream were sent.
std::string error_line(const ApiError& error);

}  // namespace loradesk::server::ollama
