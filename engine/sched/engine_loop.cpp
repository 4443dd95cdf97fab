// EngineLoop: inbox draining, one scheduler step per iteration (plan -> forward -> sample -> commit),
// and event delivery to each request's channel.
#include "sched/engine_loop.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "core/error.h"
#include "core/log.h"
#include "grammar/grammar_matcher.h"

namespace loradesk::sched {

std::optional<LoopEvent> RequestChannel::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_mutex);
    if (!m_cv.wait_for(lock, timeout, [&] { return !m_events.empty(); })) return std::nullopt;
    LoopEvent e = std::move(m_events.front());
    m_events.pop_front();
    return e;
}

void RequestChannel::push(LoopEvent e) {
    {
        std::lock_guard lock(m_mutex);
        m_events.push_back(std::move(e));
    }
    m_cv.notify_all();
}

TokenOut greedy_sample(std::span<const float> row, int n_top) {
    TokenOut out;
    out.token_id = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    if (n_top < 0) return out;
    const float max = row[std::size_t(out.token_id)];
    double sum = 0;
    for (float v : row) sum += std::exp(double(v - max));
    const float log_z = max + float(std::log(sum));
    out.logprob = row[std::size_t(out.token_id)] - log_z;
    std::vector<int32_t> idx(row.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    const std::size_t k = std::min<std::size_t>(std::size_t(n_top), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](int32_t a, int32_t b) {
        return row[std::size_t(a)] > row[std::size_t(b)] || (row[std::size_t(a)] == row[std::size_t(b)] && a < b);
    });
    for (std::size_t i = 0; i < k; ++i) out.top.emplace_back(idx[i], row[std::size_t(idx[i])] - log_z);
    return out;
}

TokenOut score_token(std::span<const float> row, int32_t token, int n_top) {
    TokenOut out;
    out.token_id = token;
    const float max = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float v : row) sum += std::exp(double(v) - double(max));
    const double log_z = double(max) + std::log(sum);
    const float chosen = row[std::size_t(token)];
    out.logprob = float(double(chosen) - log_z);
    int32_t above = 0;
    for (float v : row) above += v > chosen;
    out.rank = above + 1;
    if (n_top <= 0) return out;
    std::vector<int32_t> idx(row.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    const std::size_t k = std::min<std::size_t>(std::size_t(n_top), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](int32_t a, int32_t b) {
        return row[std::size_t(a)] > row[std::size_t(b)] || (row[std::size_t(a)] == row[std::size_t(b)] && a < b);
    });
    for (std::size_t i = 0; i < k; ++i) out.top.emplace_back(idx[i], float(double(row[std::size_t(idx[i])]) - log_z));
    return out;
}

EngineLoop::EngineLoop(runtime::ModelRunner& runner, lora::AdapterResidency& residency, EngineLoopConfig cfg)
    : m_runner(runner), m_residency(residency), m_cfg(std::move(cfg)) {
    m_n_pages = kv::PagePool::pages_for_budget(m_cfg.kv_bytes, m_runner.kv_page_bytes(m_cfg.page_size));
    m_n_slots = m_residency.n_slots();
    m_cfg.sched.capacity.max_loras = std::min(m_cfg.sched.capacity.max_loras, m_n_slots);
    const int model_ctx = m_runner.config().max_position_embeddings;
    if (model_ctx > 0 && (m_cfg.sched.max_context <= 0 || m_cfg.sched.max_context > model_ctx))
        m_cfg.sched.max_context = model_ctx;
    m_pool = std::make_unique<kv::PagePool>(m_n_pages, m_cfg.page_size);
    m_cache = std::make_unique<kv::PrefixCache>(*m_pool);
    m_sched = std::make_unique<Scheduler>(m_cfg.sched, *m_pool, *m_cache, m_residency);
    m_runner.allocate_kv(m_n_pages, m_cfg.page_size);
    m_runner.configure_lora_slots(m_n_slots, m_cfg.max_lora_rank);
    m_stats.pages_total = m_stats.pages_free = m_n_pages;
    log::info("engine loop: {} KV pages of {} tokens, {} LoRA slots, context {}", m_n_pages, m_cfg.page_size, m_n_slots,
              m_cfg.sched.max_context);
    m_thread = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { stop(); }

void EngineLoop::stop() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id()) m_thread.join();
}

std::shared_ptr<RequestChannel> EngineLoop::submit(SubmitSpec r) {
    const int vocab = m_runner.config().vocab_size;
    {
        std::lock_guard lock(m_mutex);
        if (m_stop) throw_expected(ErrorCode::unavailable, "the engine is shutting down");
    }
    m_sched->check_submit(r);
    for (int32_t t : r.prompt)
        if (t < 0 || t >= vocab)
            throw_expected(ErrorCode::invalid_argument, "prompt token id " + std::to_string(t) +
                                                            " is outside the vocabulary of " + std::to_string(vocab));
    try {
        r.sampling.params.validate(vocab);
    } catch (const Error& e) {
        throw_expected(ErrorCode::invalid_argument, e.what());
    }
    if (!r.ns.empty() && m_n_slots == 0)
        throw_expected(
            ErrorCode::unavailable,
            "adapters cannot be served: this engine has no LoRA slots (start it with --max-loras 1 or more)");
    if (m_queued.load() >= m_cfg.sched.max_waiting + m_cfg.sched.capacity.max_running)
        throw_expected(ErrorCode::capacity,
                       "the engine is at capacity (" + std::to_string(m_queued.load()) + " requests); retry later");
    auto ch = std::make_shared<RequestChannel>(m_next_id++);
    ++m_queued;
    {
        std::lock_guard lock(m_mutex);
        m_submits.emplace_back(std::move(r), ch);
    }
    m_cv.notify_all();
    return ch;
}

void EngineLoop::cancel(uint64_t id, FinishReason reason, std::string detail) {
    {
        std::lock_guard lock(m_mutex);
        m_cancels.push_back({id, reason, std::move(detail)});
    }
    m_cv.notify_all();
}

void EngineLoop::evict_adapter(std::string digest) {
    {
        std::lock_guard lock(m_mutex);
        m_evictions.push_back(std::move(digest));
    }
    m_cv.notify_all();
}

LoopStats EngineLoop::stats() const {
    std::lock_guard lock(m_mutex);
    return m_stats;
}

void EngineLoop::drain_inbox() {
    std::vector<std::pair<SubmitSpec, std::shared_ptr<RequestChannel>>> submits;
    std::vector<Cancel> cancels;
    std::vector<std::string> evictions;
    {
        std::lock_guard lock(m_mutex);
        submits.swap(m_submits);
        cancels.swap(m_cancels);
        evictions.swap(m_evictions);
    }
    for (auto& ns : evictions) m_cache->evict_namespace(ns);
    for (auto& [req, ch] : submits) {
        try {
            auto sampler = std::make_unique<runtime::Sampler>(req.sampling.params, req.prompt);
            if (req.constraint) sampler->set_constraint(std::move(req.constraint));
            m_sched->submit(std::move(req), ch->id());
            m_channels.emplace(ch->id(), ch);
            m_samplers.emplace(ch->id(), std::move(sampler));
        } catch (const Error& e) {  // e.g. the queue filled up between the caller's check and now
            FinishOut f;
            f.reason = FinishReason::error;
            f.detail = e.what();
            f.error_code = e.code();
            ch->push(std::move(f));
            --m_queued;
        }
    }
    for (auto& c : cancels) m_sched->finish(c.id, c.reason, std::move(c.detail));
}

void EngineLoop::step() {
    using Clock = std::chrono::steady_clock;
    auto seconds = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };
    const auto t0 = Clock::now();
    try {
        if (!m_sched->plan(m_plan)) return;
    } catch (const std::exception& e) {
        // A broken invariant (e.g. a residency granting a slot that does not exist): fail what is in
        // flight with the reason rather than take the process down; new requests start clean.
        log::error("engine planning failed: {}", e.what());
        std::vector<uint64_t> ids;
        for (auto& [id, ch] : m_channels) ids.push_back(id);
        for (uint64_t id : ids)
            m_sched->finish(id, FinishReason::error, std::string("the engine failed to plan a step: ") + e.what());
        return;
    }
    const auto t1 = Clock::now();
    std::vector<int32_t> sampled;
    std::vector<TokenOut> outs;
    Clock::time_point t2;
    try {
        // Only rows whose sampler needs the whole distribution come back to the host; the rest take the
        // argmax computed where the logits are.
        // Prompt-scoring rows always come back whole: their log-softmax is taken on the host.
        const std::size_t n_rows = m_plan.batch.logits_indices.size();
        m_want_logits.assign(n_rows, 0);
        for (std::size_t i = 0; i < m_plan.sampling.size(); ++i)
            m_want_logits[std::size_t(m_plan.sampling_rows[i])] = m_samplers.at(m_plan.sampling[i]->id)->needs_logits();
        for (const ScoreRow& r : m_plan.scoring) m_want_logits[std::size_t(r.row)] = 1;
        m_packed.assign(n_rows, -1);
        for (std::size_t r = 0, k = 0; r < n_rows; ++r)
            if (m_want_logits[r]) m_packed[r] = int32_t(k++);
        // Grammar masks depend only on tokens already accepted: they are computed while the model runs, and
        // greedy constrained rows take their masked argmax where the logits are.
        auto masks = start_masks();
        runtime::RowMasks row_masks;
        if (masks.valid()) {
            row_masks.ready = [&] {
                masks.get();
                gather_device_masks();
            };
            row_masks.row_mask = m_mask_of_row;
            row_masks.words = m_mask_words;
            row_masks.words_per_row = (m_runner.config().vocab_size + 31) / 32;
        }
        m_runner.forward_sampled(m_plan.batch, m_want_logits, m_argmax, m_logits, row_masks);
        if (masks.valid()) masks.get();  // (when the runner never called ready: it failed)
        t2 = Clock::now();
        score_rows();
        sample_rows(sampled, outs);
    } catch (const std::exception& e) {
        log::error("engine step failed: {}", e.what());
        for (Sequence* s : m_plan.seqs)
            m_sched->finish(s->id, FinishReason::error, std::string("the model step failed: ") + e.what());
        return;
    }
    const auto t3 = Clock::now();
    for (std::size_t i = 0; i < outs.size(); ++i) m_pending.emplace_back(m_plan.sampling[i]->id, std::move(outs[i]));
    int prefill = 0, decode = 0;
    for (std::size_t i = 0; i < m_plan.seqs.size(); ++i)
        (m_plan.seqs[i]->is_decode() ? decode : prefill) += m_plan.n_tokens[i];
    m_sched->commit(m_plan, sampled);  // may end sequences: m_pending keeps their ids
    // A grammar that is complete and takes nothing more ends its request even where EOS would not (ignore_eos,
    // min_tokens): every further token would break the structure the client asked for.
    for (Sequence* s : m_plan.sampling)
        if (s->status == SeqStatus::running && m_samplers.at(s->id)->constraint_finished())
            m_sched->finish(s->id, FinishReason::stop, "the grammar is complete");
    const auto t4 = Clock::now();

    LoopMetrics& m = m_metrics;
    m.plan_seconds += seconds(t0, t1);
    m.forward_seconds += seconds(t1, t2);
    m.sample_seconds += seconds(t2, t3);
    m.commit_seconds += seconds(t3, t4);
    m.step_seconds.observe(seconds(t0, t4));
    m.batch_size.observe(double(m_plan.seqs.size()));
    m.prefill_tokens.observe(prefill);
    m.decode_tokens.observe(decode);
    m.sampled_rows += int64_t(m_plan.sampling.size());
}

std::future<void> EngineLoop::start_masks() {
    m_mask_rows.clear();
    for (Sequence* s : m_plan.sampling) {
        runtime::Sampler* sampler = m_samplers.at(s->id).get();
        if (sampler->constrained()) m_mask_rows.emplace_back(sampler, s->stop.max_tokens - s->n_generated());
    }
    if (m_mask_rows.empty()) return {};
    // Greedy constrained rows without processors take a masked argmax on the runner; their masks are packed
    // in row order (gather_device_masks).
    const std::size_t words = std::size_t(m_runner.config().vocab_size + 31) / 32;
    m_mask_of_row.assign(m_plan.batch.logits_indices.size(), -1);
    int32_t n_device = 0;
    for (std::size_t i = 0; i < m_plan.sampling.size(); ++i) {
        const std::size_t row = std::size_t(m_plan.sampling_rows[i]);
        runtime::Sampler* sampler = m_samplers.at(m_plan.sampling[i]->id).get();
        if (sampler->constrained() && !m_want_logits[row]) m_mask_of_row[row] = n_device++;
    }
    m_mask_words.assign(std::size_t(n_device) * words, 0u);
    if (!m_sample_pool)
        m_sample_pool = std::make_unique<ThreadPool>(std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8));
    const int vocab = m_runner.config().vocab_size;
    return std::async(std::launch::async, [this, vocab] {
        m_sample_pool->parallel_for(m_mask_rows.size(), [&](std::size_t begin, std::size_t end) {
            for (std::size_t k = begin; k < end; ++k) m_mask_rows[k].first->prepare_mask(vocab, m_mask_rows[k].second);
        });
    });
}

void EngineLoop::gather_device_masks() {
    // Sized before the step (the spans in RowMasks point here); filled once the masks exist.
    const std::size_t words = std::size_t(m_runner.config().vocab_size + 31) / 32;
    std::size_t k = 0;
    for (std::size_t i = 0; i < m_plan.sampling.size(); ++i) {
        const std::size_t row = std::size_t(m_plan.sampling_rows[i]);
        if (m_mask_of_row[row] < 0) continue;
        std::span<const uint32_t> mask = m_samplers.at(m_plan.sampling[i]->id)->mask();
        std::copy(mask.begin(), mask.end(), m_mask_words.begin() + std::ptrdiff_t(k * words));
        ++k;
    }
}

void EngineLoop::sample_rows(std::vector<int32_t>& sampled, std::vector<TokenOut>& outs) {
    const std::size_t vocab = std::size_t(m_runner.config().vocab_size), n = m_plan.sampling.size();
    std::vector<runtime::Sampler*> samplers(n);
    std::vector<std::size_t> host_rows;  // rows sampled on the host, in the packed order of m_logits
    for (std::size_t i = 0; i < n; ++i) {
        samplers[i] = m_samplers.at(m_plan.sampling[i]->id).get();
        if (m_want_logits[std::size_t(m_plan.sampling_rows[i])]) host_rows.push_back(i);
    }
    // Each request has its own sampler and RNG, so rows are independent: a 150 k vocabulary costs about a
    // millisecond per sampled row, which a pool spreads over cores.
    std::vector<runtime::SampleResult> results(n);
    auto sample = [&](std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) {
            const std::size_t i = host_rows[k], packed = std::size_t(m_packed[std::size_t(m_plan.sampling_rows[i])]);
            results[i] = samplers[i]->sample(m_logits.data() + packed * vocab, int(vocab));
        }
    };
    if (host_rows.size() >= 4) {
        if (!m_sample_pool)
            m_sample_pool =
                std::make_unique<ThreadPool>(std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8));
        m_sample_pool->parallel_for(host_rows.size(), sample);
    } else {
        sample(0, host_rows.size());
    }
    for (std::size_t i = 0; i < n; ++i) {
        TokenOut out;
        const std::size_t row = std::size_t(m_plan.sampling_rows[i]);
        if (m_want_logits[row]) {
            out.token_id = results[i].token;
            out.logprob = results[i].logprob;
            for (auto& t : results[i].top) out.top.emplace_back(t.token, t.logprob);
        } else {
            out.token_id = m_argmax[row];
        }
        sampled.push_back(out.token_id);
        outs.push_back(std::move(out));
    }
    // Accepting advances each constrained row's grammar over the token's bytes (building DFA states the first time a
    // state is reached): rows are independent, so many of them go to the pool.
    auto accept = [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) samplers[i]->accept(sampled[sampled.size() - n + i]);
    };
    if (m_mask_rows.size() >= 4) {
        m_sample_pool->parallel_for(n, accept);
    } else {
        accept(0, n);
    }
    m_metrics.host_sampled_rows += int64_t(host_rows.size());
}

void EngineLoop::score_rows() {
    const std::vector<ScoreRow>& rows = m_plan.scoring;
    if (rows.empty()) return;
    const std::size_t vocab = std::size_t(m_runner.config().vocab_size);
    std::vector<TokenOut> outs(rows.size());
    auto score = [&](std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) {
            const ScoreRow& r = rows[k];
            const float* row = m_logits.data() + std::size_t(m_packed[std::size_t(r.row)]) * vocab;
            outs[k] = score_token({row, vocab}, r.seq->tokens[std::size_t(r.position + 1)], r.seq->prompt_logprobs);
        }
    };
    if (rows.size() >= 4) {
        if (!m_sample_pool)
            m_sample_pool =
                std::make_unique<ThreadPool>(std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8));
        m_sample_pool->parallel_for(rows.size(), score);
    } else {
        score(0, rows.size());
    }
    // One event per sequence and step; a sequence's rows are contiguous and in position order.
    for (std::size_t k = 0; k < rows.size();) {
        PromptLogprobsOut ev;
        ev.first_position = rows[k].position;
        const Sequence* s = rows[k].seq;
        for (; k < rows.size() && rows[k].seq == s; ++k) ev.rows.push_back(std::move(outs[k]));
        m_pending.emplace_back(s->id, std::move(ev));
    }
}

void EngineLoop::publish_stats() {
    // Per-adapter counts walk every sequence: often enough for gauges, not on every step.
    const auto now = std::chrono::steady_clock::now();
    const bool idle = m_sched->n_running() == 0 && m_sched->n_waiting() == 0;  // never leave stale counts behind
    const bool by_adapter = idle || now - m_by_adapter_at >= std::chrono::milliseconds(100);
    std::vector<std::pair<std::string, int>> running, waiting;
    if (by_adapter) {
        m_by_adapter_at = now;
        running = m_sched->count_by_adapter(SeqStatus::running);
        waiting = m_sched->count_by_adapter(SeqStatus::waiting);
    }
    std::lock_guard lock(m_mutex);
    if (by_adapter) {
        m_stats.running_by_adapter = std::move(running);
        m_stats.waiting_by_adapter = std::move(waiting);
    }
    m_stats.running = m_sched->n_running();
    m_stats.waiting = m_sched->n_waiting();
    m_stats.swapped = m_sched->n_swapped();
    m_stats.waiting_for_adapter = m_sched->n_waiting_for_adapter();
    m_stats.metrics = m_metrics;
    m_stats.pages_free = m_pool->n_free();
    m_stats.pages_cached = m_cache->n_cached_pages();
    m_stats.counters = m_sched->counters();
}

void EngineLoop::emit_tokens() {
    for (auto& [id, out] : m_pending) {
        auto it = m_channels.find(id);
        if (it != m_channels.end()) it->second->push(std::move(out));
    }
    m_pending.clear();
}

void EngineLoop::emit_finished() {
    const auto now = std::chrono::steady_clock::now();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    for (auto& s : m_sched->take_finished()) {
        auto it = m_channels.find(s->id);
        if (it == m_channels.end()) continue;
        FinishOut f;
        f.reason = s->finish_reason;
        f.detail = s->finish_detail;
        f.error_code = s->finish_code;
        f.prompt_tokens = s->n_prompt;
        f.cached_tokens = std::max(0, s->n_cached_prompt);
        f.completion_tokens = s->n_generated();
        f.preemptions = s->n_preemptions;
        f.ttft_ms = s->n_generated() > 0 ? ms(s->t_first_token - s->t_submit) : 0.0;
        f.latency_ms = ms(now - s->t_submit);
        it->second->push(std::move(f));
        m_channels.erase(it);
        m_samplers.erase(s->id);
        --m_queued;
    }
}

void EngineLoop::run() {
    for (;;) {
        {
            std::unique_lock lock(m_mutex);
            const bool idle = m_sched->n_running() == 0 && m_sched->n_waiting() == 0;
            // Waiting requests that could not run (adapter loading) are retried after a short pause.
            auto wake = [&] { return m_stop || !m_submits.empty() || !m_cancels.empty() || !m_evictions.empty(); };
            if (idle) m_cv.wait(lock, wake);
            if (m_stop) break;
        }
        drain_inbox();
        const int64_t before = m_sched->counters().steps;
        step();
        // Stats first, so that a reader woken by the last event sees the state that produced it.
        publish_stats();
        emit_tokens();
        emit_finished();
        if (m_sched->counters().steps == before && (m_sched->n_running() || m_sched->n_waiting())) {
            std::unique_lock lock(m_mutex);
            m_cv.wait_for(lock, std::chrono::milliseconds(1),
                          [&] { return m_stop || !m_submits.empty() || !m_cancels.empty() || !m_evictions.empty(); });
        }
    }
    // Shutting down: every open request ends as cancelled so that readers are not left waiting.
    std::vector<uint64_t> open;
    for (auto& [id, ch] : m_channels) open.push_back(id);
    for (uint64_t id : open) m_sched->finish(id, FinishReason::cancelled, "the engine is shutting down");
    publish_stats();
    emit_finished();
}

}  // namespace loradesk::sched
