// Runs a parsed generation request against the engine: resolves lora_path, submits one engine request per
// choice (n x prompts), and answers either with one JSON body or with an SSE producer (role chunk, deltas,
// finish chunk, optional usage chunk, [DONE]; ": keep-alive" while waiting; error-as-data after the
// headers; a failed write cancels every engine request of the response at once).
#pragma once

#include <functional>

#include "api/engine.h"
#include "server/http_types.h"
#include "server/request_parse.h"
#include "server/server_metrics.h"
#include "server/server_options.h"

namespace loradesk::server {

// Throws ApiError for failures before any output (bad adapter path, submit errors).
HttpResponse run_generation(api::Engine& engine, ParsedGeneration parsed, const ServerOptions& options,
                            ServerMetrics& metrics, std::function<bool()> client_gone = {});

}  // namespace loradesk::server
