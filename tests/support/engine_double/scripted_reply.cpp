// The scripted engine's generation side: submit() turns a request into a timed list of events (prompt scores,
// token pieces with logprobs, a finish or an error) that a ScriptedStream hands out like the real engine's stream.
#include <condition_variable>
#include <sstream>

#include "scripted_engine.h"

namespace loradesk::testing {

using namespace std::chrono;

namespace {

struct Step {
    api::Event event;
    milliseconds delay{0};  // after the previous event
};

class ScriptedStream : public api::RequestStream {
  public:
    ScriptedStream(api::SubmitInfo info, std::vector<Step> steps, std::shared_ptr<std::atomic<int>> cancelled,
                   std::shared_ptr<std::atomic<int>> live, std::shared_ptr<std::atomic<int>> finished)
        : m_info(std::move(info)),
          m_steps(std::move(steps)),
          m_cancelled_count(std::move(cancelled)),
          m_live(std::move(live)),
          m_finished(std::move(finished)),
          m_last(steady_clock::now()) {
        ++*m_live;
    }
    ~ScriptedStream() override {
        if (!m_ended) --*m_live;
    }
    const api::SubmitInfo& info() const override { return m_info; }

    std::optional<api::Event> next(milliseconds timeout) override {
        std::unique_lock lock(m_mutex);
        if (m_cancel) {
            if (m_cancel_reported) return std::nullopt;
            m_cancel_reported = true;
            api::FinishEvent f;
            f.reason = api::FinishReason::cancelled;
            return api::Event(f);
        }
        if (m_ended) return std::nullopt;
        const auto ready = m_last + m_steps[m_pos].delay;
        m_cv.wait_until(lock, std::min(ready, steady_clock::now() + timeout), [&] { return m_cancel; });
        if (m_cancel || steady_clock::now() < ready) return std::nullopt;
        m_last = steady_clock::now();
        api::Event ev = m_steps[m_pos++].event;
        if (m_pos == m_steps.size()) end();
        return ev;
    }

    // Like the real engine, a cancel frees the request at once; a FinishEvent(cancelled) follows.
    void cancel() override {
        std::lock_guard lock(m_mutex);
        if (m_ended || m_cancel) return;
        m_cancel = true;
        ++*m_cancelled_count;
        end();
        m_cv.notify_all();
    }

  private:
    void end() {
        m_ended = true;
        --*m_live;
        ++*m_finished;
    }

    api::SubmitInfo m_info;
    std::vector<Step> m_steps;
    std::shared_ptr<std::atomic<int>> m_cancelled_count, m_live, m_finished;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    steady_clock::time_point m_last;
    std::size_t m_pos = 0;
    bool m_cancel = false;
    bool m_cancel_reported = false;
    bool m_ended = false;
};

// The text directives are read from: the prompt, or the last message's content.
std::string prompt_text(const api::GenerateRequest& r) {
    if (r.prompt) return *r.prompt;
    if (r.messages && r.messages->is_array() && !r.messages->empty()) {
        const auto& c = r.messages->back()["content"];
        return c.is_string() ? c.get<std::string>() : std::string();
    }
    return "ids:" + std::to_string(r.prompt_ids.size());
}

// What ReplyStyle::echo answers to: the prompt, or the last user message.
std::string last_user_text(const api::GenerateRequest& r) {
    if (r.prompt) return *r.prompt;
    if (r.messages && r.messages->is_array())
        for (auto it = r.messages->rbegin(); it != r.messages->rend(); ++it)
            if ((*it).value("role", "") == "user") return (*it).value("content", "");
    return {};
}

std::vector<std::string> echo_pieces(const std::string& text) {
    std::vector<std::string> pieces;
    std::istringstream words(text);
    for (std::string w; words >> w;) pieces.push_back(pieces.empty() ? w : " " + w);
    return pieces;
}

std::vector<std::string> directive_pieces(const std::string& text) {
    if (text.find("#tool") != std::string::npos)
        return {"Let me check.", "\n<tool_", "call>\n{\"name\": \"get_weather\", ",
                "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"};
    if (text.find("#think") != std::string::npos) return {"<th", "ink>\nPonder", "ing.</think>", "\n\nAnswer."};
    if (text.find("#utf8") != std::string::npos) return {"caf", "\xc3\xa9", " \xe2\x9c\x93"};
    if (text.find("#long") != std::string::npos) {
        std::vector<std::string> p;
        for (int i = 0; i < 40; ++i) p.push_back(" w" + std::to_string(i));
        return p;
    }
    return {};
}

// `shift` lowers every logprob (best_of tests: a seeded choice k is seed + k, so candidates differ).
std::vector<api::TokenLogprob> logprobs_for(const std::string& piece, int i, int top, float shift = 0) {
    if (top < 0) return {};
    api::TokenLogprob lp;
    lp.chosen = {100 + i, piece, -0.25f * float(i + 1) - shift};
    for (int k = 0; k < top; ++k)
        lp.top.push_back(k == 0 ? lp.chosen : api::TopLogprob{500 + k, "alt" + std::to_string(k), -1.0f - float(k)});
    return {lp};
}

// Scripted prompt scores: one token per word (" word" after the first; "t<id>" for token ids), the first
// unscored, token i with logprob -0.5 i, rank i and `top` alternatives "alt1".. (-0.125 k).
api::TokenEvent prompt_scores(const api::GenerateRequest& r, const std::string& text, int top) {
    std::vector<std::string> tokens;
    if (!r.prompt_ids.empty()) {
        for (int32_t id : r.prompt_ids) tokens.push_back("t" + std::to_string(id));
    } else {
        tokens = echo_pieces(text);
    }
    api::TokenEvent t;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        api::TokenLogprob lp;
        lp.chosen = {int32_t(10 + i), tokens[i], i ? -0.5f * float(i) : 0.0f};
        lp.rank = int(i);
        for (int k = 0; i && k < top; ++k)
            lp.top.push_back({600 + k, "alt" + std::to_string(k + 1), -0.125f * float(k + 1)});
        t.prompt_logprobs.push_back(std::move(lp));
    }
    return t;
}

int count_prompt_tokens(const api::GenerateRequest& r, const std::string& text) {
    if (!r.prompt_ids.empty()) return int(r.prompt_ids.size());
    return int(echo_pieces(text).size());
}

// A directive that refuses the request before it starts, as the engine's admission would.
Status refusal_for(const std::string& text) {
    if (text.find("#busy") != std::string::npos)
        return Status::failure(ErrorCode::capacity, "the request queue is full; retry later");
    if (text.find("#unavailable") != std::string::npos)
        return Status::failure(ErrorCode::unavailable, "the model is still loading");
    if (text.find("#overflow") != std::string::npos)
        return Status::failure(ErrorCode::context_too_long,
                               "you requested 5000 tokens (4000 in the messages, 1000 in the completion).");
    return Status::success();
}

}  // namespace

struct ScriptedEngine::Served {
    std::string adapter;  // "" for the base model
    std::string digest;
    api::Tier tier = api::Tier::base;
};

Result<ScriptedEngine::Served> ScriptedEngine::resolve_model(const std::string& model) const {
    const std::string& id = m_fixture.model.id;
    std::string key = model;
    if (key.rfind(id + ":", 0) == 0) key = key.substr(id.size() + 1);
    if (key.empty() || key == id || key == "base") return Served{};
    const api::AdapterInfo* a = find(key);
    if (!a) return Status::failure(ErrorCode::not_found, "The model `" + model + "` does not exist.");
    if (!a->compatible)
        return Status::failure(ErrorCode::unsupported, "adapter '" + a->name + "' " + a->incompatibility);
    return Served{a->name, a->digest, a->tier};
}

Result<std::shared_ptr<api::RequestStream>> ScriptedEngine::submit(api::GenerateRequest request) {
    const std::string text = prompt_text(request);
    api::SubmitInfo info;
    std::vector<std::string> pieces;
    {
        std::lock_guard lock(m_mutex);
        if (m_shutdown) return Status::failure(ErrorCode::unavailable, "the engine is shutting down");
        m_requests.push_back(request);
        auto served = resolve_model(request.model);
        if (!served.ok()) return served.status();
        record("submit " + (served->adapter.empty() ? std::string("base") : served->adapter));
        info.request_id = request.id.empty() ? "req-" + std::to_string(m_requests.size()) : request.id;
        info.adapter = served->adapter;
        info.adapter_digest = served->digest;
        info.tier = served->tier;
        pieces = text.find("#scripted") != std::string::npos ? m_scripted_reply : directive_pieces(text);
        if (pieces.empty())
            pieces = m_fixture.reply == ReplyStyle::echo
                         ? echo_pieces(echo_reply(served->adapter, last_user_text(request)))
                         : std::vector<std::string>{"Hello", ",", " world", "!"};
    }
    if (Status refused = refusal_for(text); !refused.ok()) return refused;
    const int prompt_tokens = count_prompt_tokens(request, text);
    if (prompt_tokens >= m_fixture.model.max_context)
        return Status::failure(ErrorCode::context_too_long,
                               "This model's maximum context length is " + std::to_string(m_fixture.model.max_context) +
                                   " tokens. However, your messages resulted in " + std::to_string(prompt_tokens) +
                                   " tokens. Please reduce the length of the messages.");
    info.prompt_tokens = prompt_tokens;
    info.max_tokens = request.stop.max_tokens;
    info.prefix_hit_tokens = m_cached_tokens;
    if (request.messages) {
        auto rendered =
            render_chat(*request.messages, request.tools, request.add_generation_prompt, request.chat_template_kwargs);
        if (rendered.ok())
            info.prompt_tail = rendered->substr(rendered->size() - std::min<std::size_t>(rendered->size(), 64));
    }

    milliseconds delay(m_default_delay_ms.load());
    if (text.find("#slow") != std::string::npos) delay = milliseconds(30);
    std::vector<Step> steps;
    if (request.prompt_logprobs >= 0)
        steps.push_back({api::Event(prompt_scores(request, text, request.prompt_logprobs)), delay});
    api::FinishEvent finish;
    finish.reason = api::FinishReason::stop;
    const float shift = request.sampling.seed ? 0.1f * float(*request.sampling.seed % 7) : 0.0f;
    std::string so_far;
    int n = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (n == request.stop.max_tokens) {
            finish.reason = api::FinishReason::length;
            break;
        }
        std::string piece = pieces[i];
        bool stopped = false;
        for (const std::string& s : request.stop.stop) {
            const std::size_t at = (so_far + piece).find(s);
            if (at == std::string::npos) continue;
            piece = (so_far + piece).substr(so_far.size(), at - so_far.size());
            finish.stop_reason = s;
            stopped = true;
            break;
        }
        api::TokenEvent t;
        t.token_ids = {100 + int(i)};
        t.text = piece;
        t.logprobs = logprobs_for(pieces[i], int(i), request.logprobs, shift);
        milliseconds d = delay;
        if (i == 0 && text.find("#stall") != std::string::npos) d = milliseconds(400);
        steps.push_back({api::Event(t), d});
        so_far += piece;
        ++n;
        if (stopped) break;
        if (text.find("#fail") != std::string::npos && n == 2) {
            steps.push_back(
                {api::Event(api::ErrorEvent{Status::failure(ErrorCode::internal, "CUDA error: out of memory")}),
                 delay});
            return std::shared_ptr<api::RequestStream>(
                std::make_shared<ScriptedStream>(info, std::move(steps), m_cancelled, m_live, m_finished));
        }
    }
    if (text.find("#engine-cancel") != std::string::npos) finish.reason = api::FinishReason::cancelled;
    finish.usage = {prompt_tokens, m_cached_tokens.load(), n};
    finish.ttft_ms = double(delay.count()) + m_fixture.first_token_ms;
    finish.latency_ms = double(delay.count()) * n + m_fixture.first_token_ms + 1.0;
    steps.push_back({api::Event(finish), milliseconds(0)});
    return std::shared_ptr<api::RequestStream>(
        std::make_shared<ScriptedStream>(info, std::move(steps), m_cancelled, m_live, m_finished));
}

}  // namespace loradesk::testing
