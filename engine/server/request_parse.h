// Parsing and validation of /v1/completions and /v1/chat/completions bodies into api::GenerateRequest.
// Wrong types and out-of-range values throw ApiError 400 naming the parameter; unknown fields are ignored
// (clients send extensions freely). Sampling and stop fields come from sampling_parse.h, shared by both.
// Pure functions: no engine access, no I/O except lora_path checks.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/engine.h"
#include "server/json_fields.h"
#include "server/server_options.h"

namespace loradesk::server {

enum class Endpoint { chat, completion };

// Prompts (completions: each text prompt; chat: the messages' text together) longer than max_context times this
// many bytes are refused as context_length_exceeded before tokenizing: they cannot fit. English averages ~4 bytes
// per token; only text made almost entirely of a vocabulary's longest tokens (runs of one character) averages
// more, and such a prompt would have to be that long as well.
constexpr std::size_t kPromptBytesPerToken = 64;

struct ParsedGeneration {
    Endpoint endpoint = Endpoint::chat;
    std::string model;      // as the client wrote it (echoed in responses)
    std::string lora_path;  // canonical folder inside an adapter root or the Hugging Face cache, when given
    std::string lora_name;  // the name lora_path is loaded under when no adapter serves it yet
    // One request per prompt (completions accept a batch of prompts; chat has one). Each is submitted n times.
    std::vector<api::GenerateRequest> prompts;
    std::vector<std::string> echo_texts;  // per prompt: text to prepend when echo (completions: the prompt)
    int n = 1;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;  // chat: logprobs:true; completions: logprobs given (then top_logprobs = its value)
    int top_logprobs = 0;
    bool echo = false;
    // Completions with echo and logprobs: the logprobs object starts with the prompt's tokens (lm-eval's
    // loglikelihood). The engine scores the prompt with top_logprobs alternatives.
    bool echo_logprobs = false;
    int prompt_logprobs = -1;  // vLLM's prompt_logprobs field (0..20); -1 = not asked
    // Completions: candidates generated per prompt, of which the n with the highest cumulative logprob are
    // returned (OpenAI best_of); equals n when not given.
    int best_of = 1;
    bool parse_tool_calls = false;  // tools given and tool_choice != "none"
    std::string user;

    int n_choices() const { return int(prompts.size()) * n; }
    int n_candidates() const { return int(prompts.size()) * best_of; }
};

// `ordered`: the body's structured-output fields and tools in the client's key order (parse_ordered_fields); when
// null, they are read from `body` (keys sorted).
ParsedGeneration parse_chat_request(const nlohmann::json& body, const ServerOptions& options,
                                    const nlohmann::ordered_json* ordered = nullptr);
ParsedGeneration parse_completion_request(const nlohmann::json& body, const ServerOptions& options,
                                          const nlohmann::ordered_json* ordered = nullptr);

// Canonicalises `path` and checks that it lies inside one of `roots` (no traversal, no symlink escape).
// With a `hub_cache_dir`, an `org/name[@revision]` that is no existing path resolves to its snapshot in that
// Hugging Face cache instead (hub::resolve_snapshot; never downloads). Throws ApiError 400 naming `param` when
// it does not resolve, or when it is a path and no roots are configured.
std::string resolve_adapter_path(const std::string& path, const std::vector<std::string>& roots,
                                 const std::string& param, const std::string& hub_cache_dir = {});
// The name an adapter loaded by reference gets: a Hub id's repository name ("org/my-lora@v2" -> "my-lora"),
// else the folder's name.
std::string adapter_name_for(const std::string& reference, const std::string& resolved);

}  // namespace loradesk::server
