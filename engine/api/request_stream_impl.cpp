#include "api/request_stream_impl.h"

#include <algorithm>
#include <chrono>

#include "api/engine_core.h"
#include "catalog/stats_sink.h"
#include "tokenizer/tokenizer.h"

namespace loradesk::api {
namespace {

// The last few prompt tokens give the detokenizer the context a first generated token needs (a
// leading space that only exists relative to the text before it).
std::vector<int32_t> context_tail(const std::vector<int32_t>& prompt) {
    std::size_t n = std::min<std::size_t>(prompt.size(), 4);
    return std::vector<int32_t>(prompt.end() - std::ptrdiff_t(n), prompt.end());
}

FinishReason to_api(sched::FinishReason r) {
    switch (r) {
        case sched::FinishReason::stop:
            return FinishReason::stop;
        case sched::FinishReason::length:
            return FinishReason::length;
        case sched::FinishReason::cancelled:
            return FinishReason::cancelled;
        case sched::FinishReason::error:
            return FinishReason::cancelled;  // reported as ErrorEvent before
    }
    return FinishReason::stop;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

StreamImpl::StreamImpl(std::shared_ptr<EngineCore> core, std::shared_ptr<sched::RequestChannel> channel,
                       SubmitInfo info, const GenerateRequest& request, const std::vector<int32_t>& prompt,
                       lora::AdapterLease lease)
    : m_core(std::move(core)),
      m_channel(std::move(channel)),
      m_info(std::move(info)),
      m_detok(m_core->tokenizer, request.skip_special_tokens, context_tail(prompt)),
      m_stops(request.stop.stop),
      m_include_stop(request.stop.include_stop_str_in_output),
      m_want_logprobs(request.logprobs >= 0),
      m_want_prompt_logprobs(request.prompt_logprobs >= 0),
      m_lease(std::move(lease)) {
    if (!request.skip_special_tokens) {
        if (!request.stop.ignore_eos) m_silent_end_ids = m_core->eos_ids;
        m_silent_end_ids.insert(m_silent_end_ids.end(), request.stop.stop_token_ids.begin(),
                                request.stop.stop_token_ids.end());
        m_min_tokens = request.stop.min_tokens;
    }
    if (m_want_prompt_logprobs) {
        m_prompt_logprobs.reserve(prompt.size());
        m_prompt_logprobs.push_back({describe(prompt.front(), 0.0f), {}, 0});  // unscored: nothing precedes it
    }
}

StreamImpl::~StreamImpl() {
    // A consumer that walks away without reading to the end (client disconnected) must not leave the
    // sequence running, nor the request counted as running.
    if (!m_finished) m_core->loop->cancel(m_channel->id());
    if (!m_accounted) {
        sched::FinishOut f;
        f.reason = sched::FinishReason::cancelled;
        f.prompt_tokens = m_info.prompt_tokens;
        f.completion_tokens = m_n_generated;
        account_finish(f);
    }
}

void StreamImpl::cancel() {
    std::lock_guard lock(m_cancel_mutex);
    m_core->loop->cancel(m_channel->id());
}

std::optional<Event> StreamImpl::next(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (m_ready.empty()) {
        if (m_finished) return std::nullopt;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        auto ev = m_channel->next(std::max(left, std::chrono::milliseconds(0)));
        if (!ev) return std::nullopt;
        if (auto* t = std::get_if<sched::TokenOut>(&*ev)) {
            on_token(*t);
        } else if (auto* p = std::get_if<sched::PromptLogprobsOut>(&*ev)) {
            on_prompt_logprobs(*p);
        } else {
            on_finish(std::get<sched::FinishOut>(*ev));
        }
    }
    Event e = std::move(m_ready.front());
    m_ready.pop_front();
    return e;
}

TopLogprob StreamImpl::describe(int32_t id, float logprob) const {
    return {id, m_core->tokenizer->decode({id}, false), logprob};
}

void StreamImpl::on_prompt_logprobs(const sched::PromptLogprobsOut& p) {
    for (const sched::TokenOut& t : p.rows) {
        TokenLogprob lp{describe(t.token_id, t.logprob), {}, t.rank};
        for (auto& [id, v] : t.top) lp.top.push_back(describe(id, v));
        m_prompt_logprobs.push_back(std::move(lp));
    }
}

// The loop scores every prompt row before the prompt's last row samples, so the scores are complete by the
// first token (or by the finish of a request that only scores).
void StreamImpl::flush_prompt_logprobs() {
    if (!m_want_prompt_logprobs || m_prompt_logprobs_sent) return;
    m_prompt_logprobs_sent = true;
    TokenEvent e;
    e.prompt_logprobs = std::move(m_prompt_logprobs);
    m_ready.push_back(std::move(e));
}

void StreamImpl::on_token(const sched::TokenOut& t) {
    flush_prompt_logprobs();
    {
        std::lock_guard lock(m_core->mutex);
        m_core->generated_rate.add(1);
    }
    m_core->generated_tokens_total.fetch_add(1, std::memory_order_relaxed);
    ++m_n_generated;
    if (m_stopped_by_string) return;  // tokens already in flight when the stop string matched
    std::vector<TokenLogprob> lps;
    if (m_want_logprobs) {
        TokenLogprob lp{describe(t.token_id, t.logprob), {}};
        for (auto& [id, p] : t.top) lp.top.push_back(describe(id, p));
        lps.push_back(std::move(lp));
    }
    const bool silent_end = m_n_generated >= m_min_tokens && std::find(m_silent_end_ids.begin(), m_silent_end_ids.end(),
                                                                       t.token_id) != m_silent_end_ids.end();
    std::string delta = silent_end ? std::string() : m_detok.push(t.token_id);
    auto r = m_stops.push(delta);
    std::string text = std::move(r.text);
    if (r.stopped) {
        m_stopped_by_string = true;
        m_stop_string = r.stop;
        if (m_include_stop) text += r.stop;
        m_core->loop->cancel(m_channel->id(), sched::FinishReason::stop, r.stop);
    }
    emit_text(std::move(text), {t.token_id}, std::move(lps));
}

void StreamImpl::emit_text(std::string text, std::vector<int32_t> ids, std::vector<TokenLogprob> logprobs) {
    if (text.empty() && ids.empty()) return;
    m_ready.push_back(TokenEvent{std::move(ids), std::move(text), std::move(logprobs), {}});
}

void StreamImpl::on_finish(const sched::FinishOut& f) {
    m_finished = true;
    if (f.reason != sched::FinishReason::error && f.reason != sched::FinishReason::cancelled) flush_prompt_logprobs();
    if (!m_stopped_by_string) {
        // Flush what the detokenizer and the stop matcher held back; a stop string can still complete
        // in the held-back tail.
        auto r = m_stops.push(m_detok.finish());
        std::string text = std::move(r.text);
        if (r.stopped) {
            m_stopped_by_string = true;
            m_stop_string = r.stop;
            if (m_include_stop) text += r.stop;
        } else {
            text += m_stops.finish();
        }
        emit_text(std::move(text), {}, {});
    }
    account_finish(f);
    if (f.reason == sched::FinishReason::error) {
        m_ready.push_back(ErrorEvent{Status::failure(f.error_code, f.detail)});
        m_lease.release();
        return;
    }
    FinishEvent fe;
    fe.reason = m_stopped_by_string ? FinishReason::stop : to_api(f.reason);
    fe.stop_reason = m_stopped_by_string ? m_stop_string : f.detail;
    fe.usage = {f.prompt_tokens, f.cached_tokens, f.completion_tokens};
    fe.ttft_ms = f.ttft_ms;
    fe.latency_ms = f.latency_ms;
    m_ready.push_back(fe);
    m_lease.release();
}

void StreamImpl::account_finish(const sched::FinishOut& f) {
    if (m_accounted) return;
    m_accounted = true;
    const std::string& digest = m_info.adapter_digest;
    {
        std::lock_guard lock(m_core->mutex);
        auto& c = m_core->counters[digest];
        c.running = std::max(0, c.running - 1);
        c.prompt_tokens += uint64_t(f.prompt_tokens);
        c.cached_tokens += uint64_t(f.cached_tokens);
        c.generated_tokens += uint64_t(f.completion_tokens);
        c.last_used_unix = unix_now();
    }
    m_core->prompt_tokens_total.fetch_add(uint64_t(f.prompt_tokens), std::memory_order_relaxed);
    m_core->cached_tokens_total.fetch_add(uint64_t(f.cached_tokens), std::memory_order_relaxed);
    if (m_core->catalog) {
        catalog::StatsEvent e;
        e.kind = catalog::StatsEvent::Kind::request;
        e.digest = digest;
        e.prompt_tokens = uint32_t(f.prompt_tokens);
        e.cached_tokens = uint32_t(f.cached_tokens);
        e.completion_tokens = uint32_t(f.completion_tokens);
        e.error = f.reason == sched::FinishReason::error;
        e.ttft_ms = f.completion_tokens > 0 ? f.ttft_ms : -1;
        e.e2e_ms = f.latency_ms;
        m_core->catalog->stats().record(e);
    }
}

}  // namespace loradesk::api
