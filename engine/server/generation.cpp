// Submission, collection and SSE streaming of generation requests; see generation.h.
#include "server/generation.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/openai_format.h"

namespace loradesk::server {

namespace {

using std::chrono::milliseconds;

void apply_lora_path(api::Engine& engine, ParsedGeneration& parsed) {
    if (parsed.lora_path.empty()) return;
    namespace fs = std::filesystem;
    std::string name;
    for (const api::AdapterInfo& a : engine.adapters()) {
        std::error_code ec;
        if (fs::weakly_canonical(a.path, ec).string() == parsed.lora_path) name = a.name;
    }
    if (name.empty()) {
        name = parsed.lora_name.empty() ? fs::path(parsed.lora_path).filename().string() : parsed.lora_name;
        const Status s = engine.load_adapter(name, parsed.lora_path);
        if (!s.ok()) throw api_error_from_status(s, "lora_path");
    }
    for (api::GenerateRequest& r : parsed.prompts) r.model = name;
    if (parsed.model.empty()) parsed.model = name;
}

// Metrics label for a request that failed before the engine named its adapter. Bounded: unknown names from
// clients never become label values.
std::string failure_label(const Job& job) {
    if (!job.adapter_label.empty()) return job.adapter_label;
    const std::string& model = job.parsed.prompts.front().model;
    if (model.empty() || model == job.engine->model().id) return "base";
    auto a = job.engine->adapter(model);
    return a.ok() ? a->name : "unknown";
}

// The markers of some tool-call formats are special tokens: a tool request keeps them in the text.
void keep_tool_markers(Job& job) {
    ParsedGeneration& p = job.parsed;
    if (p.endpoint != Endpoint::chat || !p.parse_tool_calls) return;
    if (!tool_call_markers_are_special(job.options.tool_call_format)) return;
    for (api::GenerateRequest& r : p.prompts) r.skip_special_tokens = false;
}

ChatParseOptions chat_parse_options(const Job& job, const api::SubmitInfo& info) {
    ChatParseOptions o;
    o.reasoning = reasoning_mode(job.options.template_reasoning, info.prompt_tail);
    o.parse_tool_calls = job.parsed.parse_tool_calls;
    o.tool_format = job.options.tool_call_format;
    if (o.parse_tool_calls) o.tools = job.parsed.prompts.front().tools;
    return o;
}

void submit_all(Job& job) {
    ParsedGeneration& p = job.parsed;
    keep_tool_markers(job);
    for (std::size_t pi = 0; pi < p.prompts.size(); ++pi) {
        for (int k = 0; k < p.best_of; ++k) {
            // With a seed, choice k samples with seed + k (as vLLM): n identical choices would be useless.
            std::optional<api::GenerateRequest> reseeded;
            if (k > 0 && p.prompts[pi].sampling.seed) {
                reseeded = p.prompts[pi];
                reseeded->sampling.seed = *reseeded->sampling.seed + uint64_t(k);
            }
            auto result = job.engine->submit(reseeded ? *reseeded : p.prompts[pi]);
            if (!result.ok()) {
                const Status& s = result.status();
                ApiError e = api_error_from_status(s, s.code == ErrorCode::not_found ? "model" : job.error_param(),
                                                   job.engine->model().max_context, job.options.retry_after_s);
                job.cancel_unfinished();
                job.metrics->record_request(failure_label(job), job.endpoint_label, e.status);
                throw e;
            }
            Choice c;
            c.index = int(job.choices.size());
            c.prompt_index = int(pi);
            c.stream = std::move(result.value());
            c.parser = ChatDeltaParser(chat_parse_options(job, c.stream->info()));
            c.text_offset = p.echo ? p.echo_texts[pi].size() : 0;
            if (job.adapter_label.empty())
                job.adapter_label = c.stream->info().adapter.empty() ? "base" : c.stream->info().adapter;
            job.choices.push_back(std::move(c));
        }
    }
}

}  // namespace

void add_adapter_headers(Job& job, HttpResponse& r, int prefix_hit_tokens) {
    const api::SubmitInfo& info = job.choices.front().stream->info();
    r.set_header("x-adapter-tier", std::string(api::tier_name(info.tier)));
    double load_ms = 0;
    if (!info.adapter.empty())
        if (auto a = job.engine->adapter(info.adapter); a.ok()) load_ms = a->last_load_ms;
    r.set_header("x-adapter-load-ms", fmt::format("{:.1f}", load_ms));
    r.set_header("x-prefix-hit-tokens", std::to_string(prefix_hit_tokens));
}

api::Usage total_usage(const Job& job) {
    api::Usage u;
    std::vector<bool> counted(job.parsed.prompts.size(), false);
    for (const Choice& c : job.choices) {
        if (!c.finish) continue;
        // The prompt is processed once per prompt, however many choices sample from it.
        if (!counted[c.prompt_index]) {
            counted[c.prompt_index] = true;
            u.prompt_tokens += c.finish->usage.prompt_tokens;
            u.cached_tokens += c.finish->usage.cached_tokens;
        }
        u.completion_tokens += c.finish->usage.completion_tokens;
    }
    return u;
}

// Error for a request that ended without output for the client (engine-side cancel, shutdown).
ApiError ended_error(const Job& job, const api::Event& ev) {
    if (auto* e = std::get_if<api::ErrorEvent>(&ev))
        return api_error_from_status(e->status, job.error_param(), job.engine->model().max_context,
                                     job.options.retry_after_s);
    return api_error_from_status({ErrorCode::cancelled, {}}, {}, 0, job.options.retry_after_s);
}

namespace {

// ---- non-streamed ------------------------------------------------------------------------------

ojson chat_choice_json(const Job& job, Choice& c) {
    ChatDelta rest = c.parser.finish();
    c.answer.reasoning += rest.reasoning;
    c.answer.content += rest.content;
    for (auto& t : rest.tool_calls) c.answer.tool_calls.push_back(std::move(t));
    const bool has_calls = !c.answer.tool_calls.empty();
    ojson msg;
    msg["role"] = "assistant";
    std::string content = job.parsed.echo_texts[c.prompt_index] + c.answer.content;
    if (has_calls) {
        const auto b = content.find_first_not_of(" \t\r\n"), e = content.find_last_not_of(" \t\r\n");
        content = b == std::string::npos ? std::string() : content.substr(b, e - b + 1);
    }
    msg["content"] = has_calls && content.empty() ? ojson(nullptr) : ojson(content);
    msg["refusal"] = nullptr;
    if (has_calls) {
        ojson calls = ojson::array();
        for (ojson call : c.answer.tool_calls) {
            call.erase("index");
            calls.push_back(std::move(call));
        }
        msg["tool_calls"] = std::move(calls);
    }
    const auto last = c.answer.reasoning.find_last_not_of(" \t\r\n");
    if (last != std::string::npos) msg["reasoning_content"] = c.answer.reasoning.substr(0, last + 1);
    ojson choice;
    choice["index"] = c.index;
    choice["message"] = std::move(msg);
    choice["logprobs"] = job.parsed.logprobs ? chat_logprobs_json(c.logprobs) : ojson(nullptr);
    choice["finish_reason"] = has_calls ? "tool_calls" : finish_reason_name(c.finish->reason);
    if (job.parsed.prompt_logprobs >= 0)
        choice["prompt_logprobs"] = vllm_prompt_logprobs_json(c.prompt_logprobs, job.parsed.prompt_logprobs);
    return choice;
}

ojson completion_choice_json(const Job& job, Choice& c) {
    ojson choice;
    const std::string& echo = job.parsed.echo ? job.parsed.echo_texts[c.prompt_index] : std::string();
    choice["index"] = c.index;
    choice["text"] = echo + c.text;
    const bool with_top = job.parsed.top_logprobs > 0;
    ojson logprobs = nullptr;
    if (job.parsed.echo_logprobs) {
        logprobs = legacy_prompt_logprobs_json(c.prompt_logprobs, job.parsed.top_logprobs, with_top);
        append_legacy_logprobs(logprobs, legacy_logprobs_json(c.logprobs, echo.size(), with_top));
    } else if (job.parsed.logprobs) {
        logprobs = legacy_logprobs_json(c.logprobs, echo.size(), with_top);
    }
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finish_reason_name(c.finish->reason);
    if (job.parsed.prompt_logprobs >= 0)
        choice["prompt_logprobs"] = vllm_prompt_logprobs_json(c.prompt_logprobs, job.parsed.prompt_logprobs);
    return choice;
}

// best_of: of each prompt's candidates, the n with the highest cumulative logprob of their completion, in that
// order (OpenAI's choice), renumbered as n choices per prompt.
void keep_best(Job& job) {
    const int n = job.parsed.n;
    auto score = [](const Choice& c) {
        double sum = 0;
        for (const api::TokenLogprob& lp : c.logprobs) sum += lp.chosen.logprob;
        return sum;
    };
    std::vector<Choice> kept;
    for (std::size_t pi = 0; pi < job.parsed.prompts.size(); ++pi) {
        std::vector<Choice*> cands;
        for (Choice& c : job.choices)
            if (c.prompt_index == int(pi)) cands.push_back(&c);
        std::stable_sort(cands.begin(), cands.end(),
                         [&](const Choice* a, const Choice* b) { return score(*a) > score(*b); });
        for (int k = 0; k < n && k < int(cands.size()); ++k) {
            kept.push_back(std::move(*cands[std::size_t(k)]));
            kept.back().index = int(pi) * n + k;
        }
    }
    job.choices = std::move(kept);
}

HttpResponse collect(Job& job) {
    auto next_check = std::chrono::steady_clock::now();
    for (Choice& c : job.choices) {
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
                if (job.chat()) {
                    ChatDelta d = c.parser.feed(t->text);
                    c.answer.reasoning += d.reasoning;
                    c.answer.content += d.content;
                    for (auto& call : d.tool_calls) c.answer.tool_calls.push_back(std::move(call));
                } else {
                    c.text += t->text;
                }
                c.logprobs.insert(c.logprobs.end(), t->logprobs.begin(), t->logprobs.end());
                if (!t->prompt_logprobs.empty()) c.prompt_logprobs = t->prompt_logprobs;
                continue;
            }
            c.done = true;
            auto* f = std::get_if<api::FinishEvent>(&*ev);
            if (!f || f->reason == api::FinishReason::cancelled) {
                ApiError e = ended_error(job, *ev);
                job.metrics->record_request(job.adapter_label, job.endpoint_label, e.status);
                throw e;
            }
            c.finish = *f;
            job.metrics->record_finish(job.adapter_label, *f);
        }
    }
    const api::Usage usage = total_usage(job);  // every candidate of best_of counts, as OpenAI bills them
    if (job.parsed.best_of > job.parsed.n) keep_best(job);
    ojson body;
    body["id"] = job.id;
    body["object"] = job.chat() ? "chat.completion" : "text_completion";
    body["created"] = job.created;
    body["model"] = job.parsed.model;
    if (job.chat()) body["system_fingerprint"] = nullptr;
    ojson choices = ojson::array();
    for (Choice& c : job.choices)
        choices.push_back(job.chat() ? chat_choice_json(job, c) : completion_choice_json(job, c));
    body["choices"] = std::move(choices);
    // vLLM puts a chat response's prompt_logprobs beside its choices (one prompt per chat request).
    if (job.chat() && job.parsed.prompt_logprobs >= 0)
        body["prompt_logprobs"] =
            vllm_prompt_logprobs_json(job.choices.front().prompt_logprobs, job.parsed.prompt_logprobs);
    body["usage"] = usage_json(usage);
    HttpResponse r;
    r.body = dump_json(body);
    add_adapter_headers(job, r, usage.cached_tokens);
    job.metrics->record_request(job.adapter_label, job.endpoint_label, 200);
    return r;
}

}  // namespace

std::optional<api::Event> next_or_abandon(Job& job, Choice& c, milliseconds wait,
                                          std::chrono::steady_clock::time_point& next_check, bool& gone) {
    gone = false;
    const auto now = std::chrono::steady_clock::now();
    if (job.client_gone && now >= next_check) {
        next_check = now + milliseconds(200);
        if (job.client_gone()) {
            gone = true;
            job.cancel_unfinished();
            job.metrics->record_request(job.adapter_label, job.endpoint_label, 499);
            return std::nullopt;
        }
    }
    return c.stream->next(std::min(wait, milliseconds(200)));
}

std::shared_ptr<Job> start_job(api::Engine& engine, ParsedGeneration parsed, const ServerOptions& options,
                               ServerMetrics& metrics, std::function<bool()> client_gone, std::string endpoint_label,
                               const std::string& id_prefix) {
    auto job = std::make_shared<Job>();
    job->client_gone = std::move(client_gone);
    job->engine = &engine;
    job->metrics = &metrics;
    job->options = options;
    job->endpoint_label = std::move(endpoint_label);
    job->id = new_response_id(id_prefix);
    job->created = unix_now();
    apply_lora_path(engine, parsed);
    if (parsed.echo && parsed.endpoint == Endpoint::completion) {
        for (std::size_t i = 0; i < parsed.prompts.size(); ++i) {
            if (!parsed.prompts[i].prompt_ids.empty()) {
                auto text = engine.detokenize(parsed.prompts[i].prompt_ids, parsed.prompts[i].skip_special_tokens);
                if (!text.ok()) throw api_error_from_status(text.status(), "prompt");
                parsed.echo_texts[i] = text.value();
            }
        }
    }
    if (parsed.model.empty()) parsed.model = engine.model().id;
    job->parsed = std::move(parsed);
    submit_all(*job);
    return job;
}

HttpResponse run_generation(api::Engine& engine, ParsedGeneration parsed, const ServerOptions& options,
                            ServerMetrics& metrics, std::function<bool()> client_gone) {
    const bool chat = parsed.endpoint == Endpoint::chat;
    std::shared_ptr<Job> job = start_job(engine, std::move(parsed), options, metrics, std::move(client_gone),
                                         chat ? "chat" : "completions", chat ? "chatcmpl-" : "cmpl-");
    if (!job->parsed.stream) return collect(*job);
    HttpResponse r;
    make_stream_producer(job, r);
    return r;
}

}  // namespace loradesk::server
