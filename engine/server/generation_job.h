// Internal to engine/server: the state one generation response shares between the handler that submits it
// and the producer that streams it (generation.cpp, sse_stream.cpp for OpenAI; ollama_stream.cpp for Ollama's
// NDJSON), and what both APIs do alike: submission, cancellation when the client goes, the wait for a
// non-streamed answer. Not thread-safe: the producer runs on one worker thread after the handler has returned.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
    std::size_t text_offset = 0;                     // legacy logprobs: bytes already emitted (echo + tokens)
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
    // Cancels every engine request of the job that has not finished (client gone, error sent).
    void cancel_unfinished() {
        for (Choice& c : choices)
            if (!c.done && c.stream) c.stream->cancel(), c.done = true;
    }
    bool chat() const { return parsed.endpoint == Endpoint::chat; }
    const std::string& error_param() const {
        static const std::string kMessages = "messages", kPrompt = "prompt";
        return chat() ? kMessages : kPrompt;
    }
};

// Resolves lora_path, fills echo texts and the default model, and submits every choice (n x prompts).
// Throws ApiError (counted under `endpoint_label`) when the engine refuses one; the others are cancelled.
std::shared_ptr<Job> start_job(api::Engine& engine, ParsedGeneration parsed, const ServerOptions& options,
                               ServerMetrics& metrics, std::function<bool()> client_gone, std::string endpoint_label,
                               const std::string& id_prefix);

// The next event of `c` for a response that waits for its client (non-streamed, or a stream with nothing to
// write), checking every 200 ms whether the client closed its connection. nullopt after `wait` without an
// event, or when the client is gone: then `gone` is set, every choice is cancelled and the request is
// counted as 499 (an abandoned n: 64 request once ran on for 28 s and held shutdown).
std::optional<api::Event> next_or_abandon(Job& job, Choice& c, std::chrono::milliseconds wait,
                                          std::chrono::steady_clock::time_point& next_check, bool& gone);

// Writes a streamed job's bytes; the first failed write (client gone) cancels every unfinished engine
// request of the job at once, and every later write fails.
class JobStreamWriter {
  public:
    using Clock = std::chrono::steady_clock;
    JobStreamWriter(Job& job, StreamSink& sink) : m_job(job), m_sink(sink), m_last_write(Clock::now()) {}
    bool write(std::string_view bytes) {
        if (m_gone) return false;
        if (!m_sink.write(bytes)) {
            m_gone = true;
            m_job.cancel_unfinished();
            return false;
        }
        m_last_write = Clock::now();
        return true;
    }
    bool gone() const { return m_gone; }
    Clock::time_point last_write() const { return m_last_write; }

  private:
    Job& m_job;
    StreamSink& m_sink;
    Clock::time_point m_last_write;
    bool m_gone = false;
};

void add_adapter_headers(Job& job, HttpResponse& r, int prefix_hit_tokens);
api::Usage total_usage(const Job& job);
ApiError ended_error(const Job& job, const api::Event& ev);

// Makes `r` an SSE response whose producer streams every choice of `job`.
void make_stream_producer(std::shared_ptr<Job> job, HttpResponse& r);

}  // namespace loradesk::server
