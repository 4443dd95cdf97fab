// Parsing and validation of /v1/completions and /v1/chat/completions bodies into api::GenerateRequest.
// Wrong types and out-of-range values throw ApiError 400 naming the parameter; unknown fields are ignored
// (clients send extensions freely). Pure functions: no engine access, no I/O except lora_path checks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/engine.h"
#include "server/server_options.h"

namespace loradesk::server {

enum class Endpoint { chat, completion };

struct ParsedGeneration {
    Endpoint endpoint = Endpoint::chat;
    std::string model;      // as the client wrote it (echoed in responses)
    std::string lora_path;  // canonical folder inside an adapter root, when given
    // One request per prompt (completions accept a batch of prompts; chat has one). Each is submitted n times.
    std::vector<api::GenerateRequest> prompts;
    std::vector<std::string> echo_texts;  // per prompt: text to prepend when echo (completions: the prompt)
    int n = 1;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;  // chat: logprobs:true; completions: logprobs given (then top_logprobs = its value)
    int top_logprobs = 0;
    bool echo = false;
    bool parse_tool_calls = false;  // tools given and tool_choice != "none"
    std::string user;

    int n_choices() const { return int(prompts.size()) * n; }
};

ParsedGeneration parse_chat_request(const nlohmann::json& body, const ServerOptions& options);
ParsedGeneration parse_completion_request(const nlohmann::json& body, const ServerOptions& options);

// Parses a request body as a JSON object (400 with the parser's position otherwise).
nlohmann::json parse_json_body(const std::string& body);

// Canonicalises `path` and checks that it lies inside one of `roots` (no traversal, no symlink escape).
// Throws ApiError 400 naming `param` when it does not, or when no roots are configured.
std::string resolve_adapter_path(const std::string& path, const std::vector<std::string>& roots,
                                 const std::string& param);

}  // namespace loradesk::server
