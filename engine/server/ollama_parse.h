// Parsing of Ollama's /api/chat and /api/generate bodies. Each is translated into an OpenAI body and handed to
// the OpenAI parsers (request_parse.h, sampling_parse.h), so sampling, stop strings, messages, tools and prompt
// sizes go through exactly the same validation; errors then name Ollama's fields ('options.repeat_penalty').
// What loradesk cannot do (format, template, images, context, mirostat, typical_p) is a 400 that says so,
// never silently ignored. Pure functions: no engine access.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/ollama_format.h"
#include "server/request_parse.h"
#include "server/server_options.h"

namespace loradesk::server::ollama {

struct OllamaRequest {
    std::string model;  // as the client wrote it (echoed in every response object)
    bool chat = true;   // /api/chat answers message objects, /api/generate response strings
    bool stream = true;
    // No prompt (generate) or no messages (chat): Ollama's call that loads (or, with keep_alive 0, unloads) a
    // model. `parsed` is empty then.
    bool load_only = false;
    bool logprobs = false;
    int top_logprobs = 0;
    KeepAliveSpec keep_alive;
    ParsedGeneration parsed;  // endpoint chat, or completion for a raw generate
};

OllamaRequest parse_chat(const nlohmann::json& body, const ServerOptions& options);
OllamaRequest parse_generate(const nlohmann::json& body, const ServerOptions& options);

}  // namespace loradesk::server::ollama
