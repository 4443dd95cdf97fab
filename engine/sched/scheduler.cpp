// Scheduler: request bookkeeping around the pure capacity and token steps; KV pages and prefix-cache
// locks move only here, always in the sequence's own namespace.
#include "sched/scheduler.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "core/log.h"

namespace loradesk::sched {

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::stop:
            return "stop";
        case FinishReason::length:
            return "length";
        case FinishReason::cancelled:
            return "cancelled";
        case FinishReason::error:
            return "error";
    }
    return "?";
}

std::string context_too_long_message(int max_context, int prompt_tokens, int completion_tokens,
                                     const char* prompt_word) {
    return "This model's maximum context length is " + std::to_string(max_context) +
           " tokens. However, you requested " + std::to_string(int64_t(prompt_tokens) + completion_tokens) +
           " tokens (" + std::to_string(prompt_tokens) + " in the " + prompt_word + ", " +
           std::to_string(completion_tokens) + " in the completion). Please reduce the length of the " + prompt_word +
           " or completion.";
}

Scheduler::Scheduler(SchedulerConfig cfg, kv::PagePool& pool, kv::PrefixCache& cache, lora::AdapterResidency& residency)
    : m_cfg(std::move(cfg)), m_pool(pool), m_cache(cache), m_residency(residency) {
    if (m_cfg.capacity.max_loras < 0 || m_cfg.capacity.max_running <= 0 || m_cfg.capacity.max_batch_tokens <= 0 ||
        m_cfg.max_context <= 1)
        throw_expected(ErrorCode::invalid_argument,
                       "scheduler limits must be positive (max_running, max_batch_tokens, context)");
}

Scheduler::~Scheduler() {
    for (auto& [id, s] : m_seqs) release_kv(*s);
}

void Scheduler::check_submit(const SubmitSpec& spec) const {
    const int n_prompt = int(spec.prompt.size());
    if (n_prompt == 0) throw_expected(ErrorCode::invalid_argument, "the prompt is empty; send at least one token");
    if (spec.stop.max_tokens < 0 || (spec.stop.max_tokens == 0 && spec.prompt_logprobs < 0))
        throw_expected(ErrorCode::invalid_argument,
                       "max_tokens must be at least 1 (0 is allowed only when the prompt is scored: prompt_logprobs, "
                       "or echo with logprobs)");
    if (n_prompt >= m_cfg.max_context)
        throw_expected(ErrorCode::context_too_long,
                       context_too_long_message(m_cfg.max_context, n_prompt, spec.stop.max_tokens));
    if (m_pool.pages_for_tokens(n_prompt + 1) > m_pool.n_pages())
        throw_expected(ErrorCode::capacity,
                       "the prompt of " + std::to_string(n_prompt) + " tokens does not fit the KV cache of " +
                           std::to_string(m_pool.n_pages() * m_pool.page_size()) + " tokens; raise --kv-memory");
}

uint64_t Scheduler::submit(SubmitSpec spec, uint64_t id) {
    check_submit(spec);
    const int n_prompt = int(spec.prompt.size());
    if (int(m_waiting.size()) >= m_cfg.max_waiting)
        throw_expected(ErrorCode::capacity,
                       "the request queue is full (" + std::to_string(m_cfg.max_waiting) + " waiting); retry later");
    if (id == 0) id = m_next_id;
    if (m_seqs.count(id)) throw_error(ErrorCode::internal, "duplicate sequence id " + std::to_string(id));
    m_next_id = std::max(m_next_id, id + 1);

    auto s = std::make_unique<Sequence>();
    s->id = id;
    s->ns = std::move(spec.ns);
    if (!s->ns.empty()) {
        auto [it, fresh] = m_adapter_ids.try_emplace(s->ns, int(m_adapter_ids.size()) + 1);
        s->adapter = it->second;
        if (fresh) m_slot_of.resize(std::size_t(s->adapter) + 1, 0);
    }
    s->tokens = std::move(spec.prompt);
    s->n_prompt = n_prompt;
    s->sampling = spec.sampling;
    s->stop = std::move(spec.stop);
    s->prompt_logprobs = spec.prompt_logprobs;
    s->stop.max_tokens = std::min(s->stop.max_tokens, m_cfg.max_context - n_prompt);
    // Room for the whole completion up front: no reallocation on the decode path.
    s->tokens.reserve(std::size_t(n_prompt + s->stop.max_tokens));
    s->pages.reserve(std::size_t(m_pool.pages_for_tokens(n_prompt + s->stop.max_tokens)));
    s->arrival = m_next_arrival++;
    s->enqueued_step = m_step;
    s->t_submit = std::chrono::steady_clock::now();
    if (!s->ns.empty()) m_residency.prefetch(s->ns);
    m_waiting.push_back(s.get());
    m_seqs.emplace(id, std::move(s));
    return id;
}

int Scheduler::n_swapped() const {
    int n = 0;
    for (const Sequence* s : m_waiting) n += s->n_preemptions > 0;
    return n;
}

std::vector<std::pair<std::string, int>> Scheduler::count_by_adapter(SeqStatus status) const {
    std::vector<int> n(m_adapter_ids.size() + 1, 0);
    for (const Sequence* s : status == SeqStatus::running ? m_running : m_waiting) ++n[std::size_t(s->adapter)];
    std::vector<std::pair<std::string, int>> out;
    if (n[0]) out.emplace_back("", n[0]);
    for (auto& [digest, id] : m_adapter_ids)
        if (n[std::size_t(id)]) out.emplace_back(digest, n[std::size_t(id)]);
    return out;
}

const Sequence* Scheduler::find(uint64_t id) const {
    auto it = m_seqs.find(id);
    return it == m_seqs.end() ? nullptr : it->second.get();
}

void Scheduler::remove_from(std::vector<Sequence*>& list, Sequence* s) {
    auto it = std::find(list.begin(), list.end(), s);
    if (it != list.end()) list.erase(it);
}

void Scheduler::release_kv(Sequence& s) {
    if (s.lock) {
        // Computed full pages go back through the cache in this sequence's namespace (the lock names it),
        // so a recompute or a retry of the same prompt hits them.
        std::span<const int32_t> computed(s.tokens.data(), std::size_t(s.n_computed));
        s.lock = m_cache.extend(s.lock, computed, s.pages);
        m_cache.release(s.lock);
        s.lock = nullptr;
        s.lock_depth = 0;
    }
    m_pool.release_all(s.pages);
    s.pages.clear();
    s.n_computed = 0;
}

void Scheduler::end(Sequence* s, FinishReason reason, std::string detail, ErrorCode code) {
    release_kv(*s);
    remove_from(s->status == SeqStatus::running ? m_running : m_waiting, s);
    s->status = SeqStatus::finished;
    s->finish_reason = reason;
    s->finish_detail = std::move(detail);
    s->finish_code = code;
    auto it = m_seqs.find(s->id);
    m_finished.push_back(std::move(it->second));
    m_seqs.erase(it);
    ++m_counters.finished;
}

void Scheduler::finish(uint64_t id, FinishReason reason, std::string detail, ErrorCode code) {
    auto it = m_seqs.find(id);
    if (it == m_seqs.end()) return;
    end(it->second.get(), reason, std::move(detail), code);
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_finished() { return std::exchange(m_finished, {}); }

void Scheduler::preempt(Sequence& s) {
    release_kv(s);
    remove_from(m_running, &s);
    s.status = SeqStatus::waiting;
    s.enqueued_step = m_step;
    ++s.n_preemptions;
    ++m_counters.preemptions;
    auto pos = std::lower_bound(m_waiting.begin(), m_waiting.end(), s.arrival,
                                [](const Sequence* a, uint64_t arrival) { return a->arrival < arrival; });
    m_waiting.insert(pos, &s);
}

bool Scheduler::admit(Sequence& s) {
    kv::PrefixMatch m = m_cache.acquire(s.ns, cache_key(s));
    s.lock = m.lock;
    s.lock_depth = kv::PrefixCache::depth(m.lock);
    s.pages.assign(m.pages.begin(), m.pages.end());  // keeps the capacity reserved at submit
    s.n_computed = m.n_tokens;
    if (s.n_cached_prompt < 0) {
        s.n_cached_prompt = std::min(m.n_tokens, s.n_prompt);
        m_counters.prompt_tokens += s.n_prompt;
        m_counters.cached_tokens += s.n_cached_prompt;
    }
    s.status = SeqStatus::running;
    remove_from(m_waiting, &s);
    m_running.push_back(&s);
    return true;
}

std::span<const int32_t> Scheduler::cache_key(const Sequence& s) const {
    // All but the last token: at least one token must run to produce logits.
    std::size_t n = s.tokens.size() - 1;
    // As vLLM, a scoring request does not take cached KV for the rows it still has to score; its own KV is
    // cached for others all the same.
    if (s.scoring()) n = std::min(n, std::size_t(s.n_scored));
    return {s.tokens.data(), n};
}

bool Scheduler::grow(Sequence& s, int n_tokens) {
    int need = m_pool.pages_for_tokens(s.n_computed + n_tokens) - int(s.pages.size());
    if (need <= 0) return true;
    if (need > m_pool.n_free()) m_cache.evict(need - m_pool.n_free());
    return m_pool.allocate(need, s.pages);
}

void Scheduler::cache_full_pages(Sequence& s) {
    if (s.lock && s.n_computed / m_pool.page_size() > s.lock_depth) {
        std::span<const int32_t> computed(s.tokens.data(), std::size_t(s.n_computed));
        s.lock = m_cache.extend(s.lock, computed, s.pages);
        s.lock_depth = kv::PrefixCache::depth(s.lock);
        // A retired namespace (adapter unloaded) caches nothing more: stop asking.
        if (s.lock_depth < s.n_computed / m_pool.page_size()) s.lock_depth = INT32_MAX;
    }
}

bool Scheduler::check_stop(Sequence& s) {
    const int32_t tok = s.tokens.back();
    const int n_gen = s.n_generated();
    auto contains = [](const std::vector<int32_t>& v, int32_t t) {
        return std::find(v.begin(), v.end(), t) != v.end();
    };
    if (n_gen >= s.stop.min_tokens &&
        ((!s.stop.ignore_eos && contains(s.stop.eos_token_ids, tok)) || contains(s.stop.stop_token_ids, tok))) {
        end(&s, FinishReason::stop, std::to_string(tok));
        return true;
    }
    if (n_gen >= s.stop.max_tokens || int(s.tokens.size()) >= m_cfg.max_context) {
        end(&s, FinishReason::length, {});
        return true;
    }
    return false;
}

}  // namespace loradesk::sched
