// Pure parsers of complete tool-call texts, one per model family's syntax: they turn the text of a whole call
// (or a whole reply, for Llama 3) into calls, or say it is not one (nullopt), never throw. Finding where a
// call starts and ends in streamed text is tool_call_parser.h's job.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loradesk::server {

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // compact JSON text of an object, keys in the model's order
};

// End (exclusive) of the JSON object or array that starts at text[pos], counting brackets outside strings.
// kJsonIncomplete while it is still open; kNotJson when text[pos] is neither '{' nor '['.
inline constexpr std::size_t kJsonIncomplete = std::string_view::npos;
inline constexpr std::size_t kNotJson = std::string_view::npos - 1;
std::size_t json_value_end(std::string_view text, std::size_t pos);

// {"name": "f", "arguments": {...}} (also "parameters" when `parameters_too`); arguments given as a JSON
// string are taken as the JSON text they hold. Hermes' block body, one Llama 3 call, one Mistral call.
std::optional<ParsedToolCall> parse_json_call(std::string_view text, bool parameters_too);

// A JSON object's compact text (the arguments after Mistral v11's [ARGS]); nullopt for anything else.
std::optional<std::string> parse_json_arguments(std::string_view text);

// Mistral pre-v11: [{"name", "arguments"}, ...] (a lone object is accepted too).
std::optional<std::vector<ParsedToolCall>> parse_json_call_list(std::string_view text);

// Qwen3-Coder: the body of <tool_call>…</tool_call>. Parameter values become the JSON type that the offered
// tool's schema declares for them (`tools` as the request sent them); undeclared ones stay strings.
std::optional<ParsedToolCall> parse_qwen3_coder_call(std::string_view body, const nlohmann::ordered_json& tools);

// Llama 3: a whole reply that is one or more JSON calls separated by ';' (after an optional <|python_tag|>),
// or <|python_tag|>NAME.call(k="v", ...) for a built-in tool, taken only when NAME is an offered tool.
std::optional<std::vector<ParsedToolCall>> parse_llama3_reply(std::string_view reply,
                                                              const nlohmann::ordered_json& tools);

// The names of the offered functions ({"type":"function","function":{"name":...}}).
bool offers_tool(const nlohmann::ordered_json& tools, std::string_view name);

}  // namespace loradesk::server
