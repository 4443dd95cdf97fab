// The SSE producer of streamed generations: exact chunk framing per OpenAI (role chunk, deltas, finish chunk,
// usage chunk only with include_usage, data: [DONE]), ": keep-alive" comments during silence, error-as-data
// after the headers, and immediate cancellation of every engine request when a write fails.
#include <chrono>

#include "server/generation_job.h"
#include "server/openai_format.h"

namespace loradesk::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class SseWriter {
  public:
    SseWriter(Job& job, StreamSink& sink) : m_job(job), m_out(job, sink) {}

    bool gone() const { return m_out.gone(); }
    Clock::time_point last_write() const { return m_out.last_write(); }

    bool raw(const std::string& bytes) { return m_out.write(bytes); }
    bool event(const ojson& data) { return raw("data: " + dump_json(data) + "\n\n"); }

    // One chunk with a single choice. `part` is the chat delta or the completion text.
    // prompt_logprobs (vLLM's field) goes into the choice when not null.
    bool chunk(const Choice& c, ojson part, ojson logprobs, ojson finish_reason, ojson prompt_logprobs = nullptr) {
        ojson choice;
        choice["index"] = c.index;
        if (m_job.chat())
            choice["delta"] = std::move(part);
        else
            choice["text"] = std::move(part);
        choice["logprobs"] = std::move(logprobs);
        choice["finish_reason"] = std::move(finish_reason);
        if (!prompt_logprobs.is_null()) choice["prompt_logprobs"] = std::move(prompt_logprobs);
        ojson choices = ojson::array();
        choices.push_back(std::move(choice));
        ojson body = header();
        body["choices"] = std::move(choices);
        if (m_job.parsed.include_usage) body["usage"] = nullptr;
        return event(body);
    }

    ojson header() const {
        ojson body;
        body["id"] = m_job.id;
        body["object"] = m_job.chat() ? "chat.completion.chunk" : "text_completion";
        body["created"] = m_job.created;
        body["model"] = m_job.parsed.model;
        return body;
    }

  private:
    Job& m_job;
    JobStreamWriter m_out;
};

ojson chat_delta_json(const ChatDelta& d) {
    ojson delta = ojson::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) delta["content"] = d.content;
    if (!d.tool_calls.empty()) delta["tool_calls"] = d.tool_calls;
    return delta;
}

// The scored prompt, in a chunk of its own with empty text after the echo chunk: the legacy logprobs of the
// echoed tokens (echo + logprobs) and/or vLLM's prompt_logprobs.
bool on_prompt_logprobs(Job& job, Choice& c, const api::TokenEvent& t, SseWriter& w) {
    ojson logprobs = nullptr, prompt = nullptr;
    if (job.parsed.echo_logprobs)
        logprobs = legacy_prompt_logprobs_json(t.prompt_logprobs, job.parsed.top_logprobs, job.parsed.top_logprobs > 0);
    if (job.parsed.prompt_logprobs >= 0)
        prompt = vllm_prompt_logprobs_json(t.prompt_logprobs, job.parsed.prompt_logprobs);
    if (logprobs.is_null() && prompt.is_null()) return true;
    ojson part = job.chat() ? ojson{{"content", ""}} : ojson("");
    return w.chunk(c, std::move(part), std::move(logprobs), nullptr, std::move(prompt));
}

bool on_tokens(Job& job, Choice& c, const api::TokenEvent& t, SseWriter& w) {
    if (!t.prompt_logprobs.empty()) return on_prompt_logprobs(job, c, t, w);
    ojson logprobs = nullptr;
    if (job.parsed.logprobs) {
        logprobs = job.chat() ? chat_logprobs_json(t.logprobs)
                              : legacy_logprobs_json(t.logprobs, c.text_offset, job.parsed.top_logprobs > 0);
        for (const api::TokenLogprob& lp : t.logprobs) c.text_offset += lp.chosen.token.size();
    }
    if (!job.chat()) {
        // A generated token whose text is still held back (part of a UTF-8 character, a skipped special
        // token) still gets its chunk with empty text, as vLLM sends it: clients see progress, and
        // time-to-first-token measured by clients means the first token, not the first printable byte.
        if (t.text.empty() && logprobs.is_null() && t.token_ids.empty()) return true;
        return w.chunk(c, t.text, std::move(logprobs), nullptr);
    }
    const ChatDelta d = c.parser.feed(t.text);
    if (d.empty() && logprobs.is_null()) return true;  // held back: may be the start of a tag
    ojson delta = chat_delta_json(d);
    if (delta.empty()) delta["content"] = "";  // logprobs for text that is still held back
    return w.chunk(c, std::move(delta), std::move(logprobs), nullptr);
}

bool on_finish(Job& job, Choice& c, const api::FinishEvent& f, SseWriter& w) {
    c.finish = f;
    job.metrics->record_finish(job.adapter_label, f);
    std::string reason = finish_reason_name(f.reason);
    if (job.chat()) {
        const ChatDelta rest = c.parser.finish();
        if (!rest.empty() && !w.chunk(c, chat_delta_json(rest), nullptr, nullptr)) return false;
        if (c.parser.n_tool_calls() > 0) reason = "tool_calls";
        return w.chunk(c, ojson::object(), nullptr, reason);
    }
    return w.chunk(c, "", nullptr, reason);
}

// Polls the unfinished choices once. Returns false when the stream must end now (client gone or error sent).
bool poll_round(Job& job, SseWriter& w, bool& any_event) {
    int active = 0;
    for (const Choice& c : job.choices) active += c.done ? 0 : 1;
    const milliseconds keep_alive(job.options.keep_alive_ms);
    for (Choice& c : job.choices) {
        if (c.done) continue;
        milliseconds wait(5);  // several choices: short polls so none waits behind another
        if (active == 1) {
            const auto since = std::chrono::duration_cast<milliseconds>(Clock::now() - w.last_write());
            wait = std::max(milliseconds(1), keep_alive - since);
        }
        std::optional<api::Event> ev = c.stream->next(wait);
        if (!ev) continue;
        any_event = true;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            if (!on_tokens(job, c, *t, w)) return false;
            continue;
        }
        c.done = true;
        auto* f = std::get_if<api::FinishEvent>(&*ev);
        if (f && f->reason != api::FinishReason::cancelled) {
            if (!on_finish(job, c, *f, w)) return false;
            continue;
        }
        const ApiError e = ended_error(job, *ev);
        job.cancel_unfinished();
        job.metrics->record_request(job.adapter_label, job.endpoint_label, e.status);
        w.raw(sse_error_event(e));
        w.raw("data: [DONE]\n\n");
        return false;
    }
    return true;
}

void produce(Job& job, StreamSink& sink) {
    SseWriter w(job, sink);
    for (Choice& c : job.choices) {
        const std::string& echo = job.parsed.echo ? job.parsed.echo_texts[c.prompt_index] : std::string();
        if (job.chat()) {
            ojson delta;
            delta["role"] = "assistant";
            delta["content"] = echo;
            if (!w.chunk(c, std::move(delta), nullptr, nullptr)) break;
        } else if (!echo.empty() && !w.chunk(c, echo, nullptr, nullptr)) {
            break;
        }
    }
    bool all_done = false;
    while (!w.gone() && !all_done) {
        bool any_event = false;
        if (!poll_round(job, w, any_event)) {
            if (w.gone()) job.metrics->record_request(job.adapter_label, job.endpoint_label, 499);
            return;
        }
        all_done = true;
        for (const Choice& c : job.choices) all_done = all_done && c.done;
        if (!any_event && !all_done && Clock::now() - w.last_write() >= milliseconds(job.options.keep_alive_ms))
            w.raw(": keep-alive\n\n");
    }
    if (w.gone()) {
        job.metrics->record_request(job.adapter_label, job.endpoint_label, 499);  // client closed the request
        return;
    }
    if (job.parsed.include_usage) {
        ojson body = w.header();
        body["choices"] = ojson::array();
        body["usage"] = usage_json(total_usage(job));
        w.event(body);
    }
    w.raw("data: [DONE]\n\n");
    job.metrics->record_request(job.adapter_label, job.endpoint_label, 200);
}

}  // namespace

void make_stream_producer(std::shared_ptr<Job> job, HttpResponse& r) {
    r.content_type = "text/event-stream";
    r.set_header("Cache-Control", "no-cache");
    r.set_header("X-Accel-Buffering", "no");
    int prefix_hits = 0;
    std::vector<bool> counted(job->parsed.prompts.size(), false);
    for (const Choice& c : job->choices) {
        if (counted[c.prompt_index]) continue;
        counted[c.prompt_index] = true;
        prefix_hits += c.stream->info().prefix_hit_tokens;
    }
    add_adapter_headers(*job, r, prefix_hits);
    r.stream = [job](StreamSink& sink) { produce(*job, sink); };
}

}  // namespace loradesk::server
