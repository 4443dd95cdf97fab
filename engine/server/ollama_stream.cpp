// Ollama generation answers: the single object and the NDJSON producer; see ollama_stream.h.
#include "server/ollama_stream.h"

#include <chrono>

namespace loradesk::server::ollama {

namespace {

using std::chrono::milliseconds;

// New text split as the OpenAI chat path splits it (reasoning, content, tool calls); a raw generate's text
// is all response.
ChatDelta feed(Job& job, Choice& c, const std::string& text) {
    if (job.chat()) return c.parser.feed(text);
    ChatDelta d;
    d.content = text;
    return d;
}

void append(ChatDelta& to, ChatDelta from) {
    to.reasoning += from.reasoning;
    to.content += from.content;
    for (auto& call : from.tool_calls) to.tool_calls.push_back(std::move(call));
}

// One response object with done: false.
ojson object_for(const OllamaJob& o, const ChatDelta& d, const std::vector<api::TokenLogprob>& logprobs) {
    ojson body;
    body["model"] = o.model;
    body["created_at"] = rfc3339(std::chrono::system_clock::now());
    std::string content = d.content;
    const ojson calls = tool_calls_json(d.tool_calls, content);
    if (o.chat) {
        ojson message;
        message["role"] = "assistant";
        message["content"] = content;
        if (!d.reasoning.empty()) message["thinking"] = d.reasoning;
        if (!calls.empty()) message["tool_calls"] = calls;
        body["message"] = std::move(message);
    } else {
        body["response"] = content;
        if (!d.reasoning.empty()) body["thinking"] = d.reasoning;
    }
    body["done"] = false;
    if (o.logprobs) body["logprobs"] = logprobs_json(logprobs);
    return body;
}

// The adapter load this request waited for: the adapter's last load, when it was not on the GPU at submission.
double load_ms(const Job& job) {
    const api::SubmitInfo& info = job.choices.front().stream->info();
    if (info.adapter.empty() || info.tier == api::Tier::gpu || info.tier == api::Tier::base) return 0;
    auto a = job.engine->adapter(info.adapter);
    return a.ok() ? a->last_load_ms : 0;
}

// Records a finish; for an error or an engine-side cancel, returns the error to answer with.
std::optional<ApiError> on_end(Job& job, Choice& c, const api::Event& ev) {
    c.done = true;
    auto* f = std::get_if<api::FinishEvent>(&ev);
    if (!f || f->reason == api::FinishReason::cancelled) {
        ApiError e = ended_error(job, ev);
        job.metrics->record_request(job.adapter_label, job.endpoint_label, e.status);
        return e;
    }
    c.finish = *f;
    job.metrics->record_finish(job.adapter_label, *f);
    return std::nullopt;
}

void produce(OllamaJob& o, StreamSink& sink) {
    Job& job = *o.job;
    Choice& c = job.choices.front();
    JobStreamWriter w(job, sink);
    const auto line = [&](const ojson& body) { return w.write(dump_json(body) + "\n"); };
    auto next_check = std::chrono::steady_clock::now();
    while (!c.done) {
        // NDJSON has no comment line to probe the connection with during silence (Ollama's clients parse every
        // line), so a closed connection is noticed from the socket instead.
        bool gone = false;
        std::optional<api::Event> ev = next_or_abandon(job, c, milliseconds(200), next_check, gone);
        if (gone) return;
        if (!ev) continue;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            const ChatDelta d = feed(job, c, t->text);
            if (d.empty() && (!o.logprobs || t->logprobs.empty())) continue;  // held back: may start a tag
            if (!line(object_for(o, d, t->logprobs))) break;
            continue;
        }
        if (std::optional<ApiError> e = on_end(job, c, *ev)) {
            w.write(error_line(*e));
            return;
        }
    }
    if (w.gone()) {
        job.metrics->record_request(job.adapter_label, job.endpoint_label, 499);  // client closed the request
        return;
    }
    o.times.load_ms = load_ms(job);
    ojson last = object_for(o, job.chat() ? c.parser.finish() : ChatDelta{}, {});
    add_final_stats(last, *c.finish, o.times);
    const bool sent = line(last);
    job.metrics->record_request(job.adapter_label, job.endpoint_label, sent ? 200 : 499);
}

}  // namespace

HttpResponse collect(OllamaJob& o) {
    Job& job = *o.job;
    Choice& c = job.choices.front();
    std::vector<api::TokenLogprob> logprobs;
    auto next_check = std::chrono::steady_clock::now();
    while (!c.done) {
        bool gone = false;
        std::optional<api::Event> ev = next_or_abandon(job, c, milliseconds(200), next_check, gone);
        if (gone) {
            HttpResponse r;  // nobody reads it
            r.status = 499;
            return r;
        }
        if (!ev) continue;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            append(c.answer, feed(job, c, t->text));
            logprobs.insert(logprobs.end(), t->logprobs.begin(), t->logprobs.end());
            continue;
        }
        if (std::optional<ApiError> e = on_end(job, c, *ev)) throw *e;
    }
    if (job.chat()) append(c.answer, c.parser.finish());
    const auto last = c.answer.reasoning.find_last_not_of(" \t\r\n");
    c.answer.reasoning.resize(last == std::string::npos ? 0 : last + 1);
    o.times.load_ms = load_ms(job);
    ojson body = object_for(o, c.answer, logprobs);
    add_final_stats(body, *c.finish, o.times);
    HttpResponse r;
    r.body = dump_json(body);
    add_adapter_headers(job, r, c.finish->usage.cached_tokens);
    job.metrics->record_request(job.adapter_label, job.endpoint_label, 200);
    return r;
}

void make_ndjson_producer(std::shared_ptr<OllamaJob> o, HttpResponse& r) {
    r.content_type = "application/x-ndjson";
    r.set_header("Cache-Control", "no-cache");
    r.set_header("X-Accel-Buffering", "no");
    add_adapter_headers(*o->job, r, o->job->choices.front().stream->info().prefix_hit_tokens);
    r.stream = [o](StreamSink& sink) { produce(*o, sink); };
}

}  // namespace loradesk::server::ollama
