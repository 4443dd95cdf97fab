// Options of the HTTP server (transport and route behaviour). Plain data, filled by loradeskd/the app.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "server/reasoning_splitter.h"
#include "server/tool_call_format.h"

namespace loradesk::server {

struct ServerOptions {
    std::string host = "127.0.0.1";          // loopback only unless the user asks for more
    int port = 8080;                         // 0 = any free port (tests)
    std::string api_key;                     // empty = accept any key (local use); else Bearer / x-api-key / api-key
    std::vector<std::string> adapter_roots;  // lora_path / load_lora_adapter paths must lie inside one
    // lora_path / load_lora_adapter also take Hub ids (org/name[@revision]), read from this Hugging Face cache;
    // empty = Hub ids are not accepted.
    std::string hub_cache_dir;
    // Allowed browser origins; "*" in the port position matches any port, a lone "*" allows any origin.
    std::vector<std::string> cors_origins = {"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"};
    // Extra Host header names accepted on a loopback bind without an API key (DNS-rebinding defence).
    std::vector<std::string> allowed_hosts;
    std::size_t max_body_bytes = std::size_t(32) << 20;    // 413 above, counted while reading (chunked too)
    std::size_t max_header_bytes = std::size_t(32) << 10;  // request line + headers; 431 above
    // Worker threads: each live stream holds one, so this caps the streams in flight (20 req/s of 15 s
    // requests is 300); idle threads cost only their stacks' address space.
    int threads = 1024;
    int listen_backlog = 511;       // connections the kernel queues before they are accepted
    int max_connections = 4096;     // open sockets (capped at half the open-file limit)
    int header_timeout_s = 10;      // a request head must arrive within this (408 after)
    int idle_timeout_s = 5;         // a kept-alive connection without a new request is closed
    int read_timeout_s = 60;        // a request body must arrive within this once a worker reads it
    int write_timeout_s = 600;      // a slow reader of a long generation
    int keep_alive_ms = 5000;       // SSE ": keep-alive" comment after this much silence
    int default_max_tokens = 4096;  // when the request gives none (clipped by the context)
    int max_n = 64;                 // most choices per request (n, and prompts x n)
    // Longer prompts are refused before tokenizing; 0 = the model's context x kPromptBytesPerToken (the Router
    // fills it in from the engine).
    std::size_t max_prompt_bytes = 0;
    int retry_after_s = 1;  // Retry-After on 429 / 503
    std::string owned_by = "loradesk";
    // /metrics lists per-adapter series only for adapters active within this many seconds (or running,
    // waiting, on the GPU, pinned); 0 = every adapter, whatever the catalog holds.
    int metrics_adapter_window_s = 600;
    // Tool-call syntax of the model's replies: one of kToolCallParserNames; "auto" reads the chat template.
    std::string tool_call_parser = "auto";
    // Filled in by the Router from the engine's chat template and tool_call_parser; routes read these.
    ToolCallFormat tool_call_format = ToolCallFormat::hermes;
    TemplateReasoning template_reasoning = TemplateReasoning::unknown;
};

}  // namespace loradesk::server
