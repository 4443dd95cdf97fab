// Internal to engine/server: the state one generation response shares between the handler that submits it
// and the SSE producer that streams it (generation.cpp, sse_stream.cpp). Not thread-safe: the producer
// runs on one worker thread after the handler has returned.
#pragma once

#include <chrono>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/engine.h"
#include "server/api_error.h"
#include "server/chat_delta_parser.h"
#include "server/http_types.h"
#include "server/request_parse.h"
#include "server/server_metrics.h"
#include "server/server_options.h"

namespace loradesk::server {

struct Choice {
    int index = 0;
    int prompt_index = 0;
    std::shared_ptr<api::RequestStream> stream;
    ChatDeltaParser parser{false};
    ChatDelta answer;  // accumulated (non-streamed chat)
    std::string text;  // accumulated (non-streamed completions)
    std::vector<api::TokenLogprob> logprobs;
    std::vector<api::TokenLogprob> prompt_logprobs;  // when the prompt is scored (echo + logprobs, prompt_logprobs)
    std::size_t text_offset = 0;  // legacy logprobs: bytes already emitted (echo + tokens)
    std::optional<api::FinishEvent> finish;
    bool done = false;
};

// Shared by the handler and the stream producer; cancels unfinished engine requests if it dies first.
struct Job {
    api::Engine* engine = nullptr;
    ServerMetrics* metrics = nullptr;
    ParsedGeneration parsed;
    ServerOptions options;
    std::string id;
    int64_t created = 0;
    std::string adapter_label;
    std::string endpoint_label;
    std::vector<Choice> choices;
    std::function<bool()> client_gone;  // non-streamed: checked while waiting; empty = cannot tell

    ~Job() {
        for (Choice& c : choices)
            if (!c.done && c.stream) c.stream->cancel();
    }
    bool chat() const { return parsed.endpoint == Endpoint::chat; }
    const std::string& error_param() const {
        static const std::string kMessages = "messages", kPrompt = "prompt";
        return chat() ? kMessages : kPrompt;
    }
};

void add_adapter_headers(Job& job, HttpResponse& r, int prefix_hit_tokens);
api::Usage total_usage(const Job& job);
ApiError ended_error(const Job& job, const api::Event& ev);

// Makes `r` an SSE response whose producer streams every choice of `job`.
void make_stream_producer(std::shared_ptr<Job> job, HttpResponse& r);

}  // namespace loradesk::server
