// Answers for a submitted Ollama generation (/api/chat, /api/generate): one JSON object when stream is false,
// else NDJSON (application/x-ndjson), one object per line with done: false, then a last one with done: true and
// the statistics, or {"error": "..."} when the request fails after the headers were sent. The engine request is
// cancelled at once when the client goes (a failed write, or a closed connection while nothing is written).
#pragma once

#include <memory>
#include <string>

#include "server/generation_job.h"
#include "server/ollama_format.h"

namespace loradesk::server::ollama {

struct OllamaJob {
    std::shared_ptr<Job> job;  // one choice
    bool chat = true;          // message objects (/api/chat) or response strings (/api/generate)
    bool logprobs = false;
    std::string model;  // the name the client asked for
    GenerationTimes times;
};

// Waits for the whole answer. Throws ApiError when the request fails.
HttpResponse collect(OllamaJob& o);
// Makes `r` the NDJSON stream of `o`.
void make_ndjson_producer(std::shared_ptr<OllamaJob> o, HttpResponse& r);

}  // namespace loradesk::server::ollama
