// Scheduler::plan / commit: one step from candidates to a ForwardBatch, and back from sampled tokens.
#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/log.h"
#include "sched/scheduler.h"

namespace loradesk::sched {

namespace {

// Waiting requests looked at per step: enough to fill the running set twice over (pack regroups them).
int waiting_scan_limit(const CapacityConfig& c, int n_running) { return std::max(64, 2 * (c.max_running - n_running)); }

}  // namespace

int Scheduler::reserve_pages(const Sequence& s, int kv_after_step) const {
    const int reserve = m_cfg.capacity.reserve_tokens;
    if (reserve <= 0) return 0;
    // A sequence ends at n_prompt + max_tokens: growth beyond that is never needed.
    const int end = std::min(s.n_prompt + s.stop.max_tokens, kv_after_step + reserve);
    return std::max(0, m_pool.pages_for_tokens(end) - m_pool.pages_for_tokens(kv_after_step));
}

int Scheduler::gather_candidates(std::vector<CapacityCandidate>& run_c, std::vector<CapacityCandidate>& wait_c) {
    const CapacityConfig& cc = m_cfg.capacity;
    run_c.reserve(m_running.size());
    int available = m_pool.n_free() + m_cache.n_evictable_pages(), need = 0;
    for (std::size_t i = 0; i < m_running.size(); ++i) {
        const Sequence& s = *m_running[i];
        int chunk = std::min(s.n_pending(), cc.max_batch_tokens);
        int pages = std::max(0, m_pool.pages_for_tokens(s.n_computed + chunk) - int(s.pages.size()));
        need += pages;
        run_c.push_back(
            {int(i), s.ns, s.adapter, pages, chunk, s.arrival, 0, 0, reserve_pages(s, s.n_computed + chunk)});
    }
    if (need > available)  // only then is preemption on the table: pages nobody else holds come back
        for (auto& c : run_c)
            for (int32_t p : m_running[std::size_t(c.id)]->pages) c.reclaimable += m_pool.ref_count(p) <= 2;
    if (int(m_running.size()) < cc.max_running) {
        int limit = std::min(int(m_waiting.size()), waiting_scan_limit(cc, int(m_running.size())));
        for (int i = 0; i < limit; ++i) {
            const Sequence& s = *m_waiting[std::size_t(i)];
            int hit = m_cache.match_length(s.ns, cache_key(s));
            int chunk = std::min(int(s.tokens.size()) - hit, cc.max_batch_tokens);
            int pages = m_pool.pages_for_tokens(hit + chunk) - hit / m_pool.page_size();
            wait_c.push_back({i, s.ns, s.adapter, pages, chunk, s.arrival, m_step - s.enqueued_step, 0,
                              reserve_pages(s, hit + chunk)});
        }
    }

    return available;
}

void Scheduler::apply_residency(const std::vector<std::string>& adapters, std::vector<Sequence*>& go,
                                std::vector<Sequence*>& admit_list) {
    std::vector<lora::SlotGrant> grants = m_residency.acquire_slots(adapters);
    if (grants.size() != adapters.size())
        throw_error(ErrorCode::internal, "adapter residency returned the wrong number of grants");
    std::unordered_set<int> not_ready;
    for (std::size_t a = 0; a < grants.size(); ++a) {
        const std::string& digest = adapters[a];
        if (grants[a].state == lora::Residency::ready) {
            if (grants[a].slot < 1 || grants[a].slot > m_residency.n_slots())
                throw_error(ErrorCode::internal, "adapter residency granted slot " + std::to_string(grants[a].slot));
            m_slot_of[std::size_t(m_adapter_ids.at(digest))] = grants[a].slot;
            continue;
        }
        not_ready.insert(m_adapter_ids.at(digest));
        if (grants[a].state == lora::Residency::failed) {
            std::vector<Sequence*> doomed;
            for (auto& [id, s] : m_seqs)
                if (s->ns == digest) doomed.push_back(s.get());
            for (Sequence* s : doomed) end(s, FinishReason::error, grants[a].error, grants[a].error_code);
        }
    }
    auto drop = [&](std::vector<Sequence*>& v) {
        return std::erase_if(v, [&](Sequence* s) { return not_ready.count(s->adapter) > 0; });
    };
    drop(go);
    m_waiting_for_adapter += int(drop(admit_list));
}

bool Scheduler::plan(StepPlan& out) {
    // Cleared, not reallocated: the arrays keep their capacity from step to step.
    runtime::ForwardBatch& b = out.batch;
    for (auto* v : {&b.token_ids, &b.positions, &b.qo_indptr, &b.kv_indptr, &b.kv_indices, &b.kv_last_page_len,
                    &b.seq_lora_slot, &b.logits_indices})
        v->clear();
    b.page_size = m_pool.page_size();
    out.seqs.clear();
    out.n_tokens.clear();
    out.sampling.clear();
    out.sampling_rows.clear();
    out.scoring.clear();
    const CapacityConfig& cc = m_cfg.capacity;

    // 1. Candidates with the pages their next chunk needs.
    std::vector<CapacityCandidate> run_c, wait_c;
    const int available = gather_candidates(run_c, wait_c);

    // 2. Capacity step, then residency for the adapters it chose.
    CapacityPlan cap = plan_capacity(cc, run_c, wait_c, available);
    m_waiting_for_adapter = cap.deferred_for_adapter;
    std::vector<Sequence*> go, admit_list;
    for (int i : cap.running) go.push_back(m_running[std::size_t(i)]);
    for (int i : cap.admitted) admit_list.push_back(m_waiting[std::size_t(i)]);
    std::vector<Sequence*> victims;
    for (int i : cap.preempted) victims.push_back(m_running[std::size_t(i)]);
    for (Sequence* v : victims) preempt(*v);

    if (!cap.adapters.empty()) apply_residency(cap.adapters, go, admit_list);
    for (Sequence* s : admit_list) admit(*s);
    go.insert(go.end(), admit_list.begin(), admit_list.end());

    // 3. Token budget, then pages for each chunk.
    std::vector<TokenCandidate> tc;
    tc.reserve(go.size());
    for (Sequence* s : go) tc.push_back({s->n_pending(), s->is_decode()});
    std::vector<int> n = plan_tokens(cc.max_batch_tokens, tc);
    cap_scoring_rows(go, n);
    Sequence* starved = nullptr;
    for (std::size_t i = 0; i < go.size(); ++i)
        if (n[i] > 0 && !grow(*go[i], n[i])) {
            n[i] = 0;
            if (!starved) starved = go[i];
        }
    build_batch(out, go, n);
    if (out.seqs.empty() && starved &&
        m_pool.n_free() + m_cache.n_evictable_pages() < m_pool.pages_for_tokens(starved->n_computed + 1)) {
        // Nothing else can give pages back: this request alone outgrew the KV cache.
        end(starved, FinishReason::error,
            "the KV cache (" + std::to_string(m_pool.n_pages() * m_pool.page_size()) +
                " tokens) cannot hold this request; raise --kv-memory or lower max_tokens",
            ErrorCode::too_large);
    }
    return !out.seqs.empty();
}

void Scheduler::cap_scoring_rows(const std::vector<Sequence*>& go, std::vector<int>& n) const {
    // Every running sequence may need a sampling row; scoring gets what is left, but always a few rows so
    // that a full decode set cannot starve a scoring request.
    constexpr int kMinScoreRows = 8;
    int budget = std::max(kMinScoreRows, m_cfg.max_logits_rows - int(go.size()));
    for (std::size_t i = 0; i < go.size(); ++i) {
        const Sequence& s = *go[i];
        if (!s.scoring() || n[i] <= 0) continue;
        // Rows [first, end) of this chunk score prompt tokens; the chunk's tokens before `first` were
        // scored before a preemption and are only recomputed.
        const int first = std::max(s.n_computed, s.n_scored);
        const int end = std::min(s.n_computed + n[i], s.n_prompt - 1);
        const int rows = std::max(0, end - first), take = std::min(rows, budget);
        if (take < rows) n[i] = first - s.n_computed + take;
        budget -= take;
    }
}

void Scheduler::build_batch(StepPlan& out, std::vector<Sequence*>& seqs, const std::vector<int>& n_tokens) {
    // Ordered by slot (a stable counting sort: slots are 0..n_slots) so that each adapter's tokens form
    // one contiguous SGMV segment.
    const int n_slots = m_residency.n_slots();
    std::vector<int> count(std::size_t(n_slots) + 2, 0);
    for (std::size_t i = 0; i < seqs.size(); ++i)
        if (n_tokens[i] > 0) {
            seqs[i]->slot = seqs[i]->adapter == 0 ? 0 : m_slot_of[std::size_t(seqs[i]->adapter)];
            ++count[std::size_t(seqs[i]->slot) + 1];
        }
    for (std::size_t k = 1; k < count.size(); ++k) count[k] += count[k - 1];
    std::vector<std::pair<Sequence*, int>> run(std::size_t(count.back()));
    for (std::size_t i = 0; i < seqs.size(); ++i)
        if (n_tokens[i] > 0) run[std::size_t(count[std::size_t(seqs[i]->slot)]++)] = {seqs[i], n_tokens[i]};
    runtime::ForwardBatch& b = out.batch;
    const int ps = m_pool.page_size();
    b.qo_indptr.assign(1, 0);
    b.kv_indptr.assign(1, 0);
    for (auto& [s, n] : run) {
        for (int j = 0; j < n; ++j) {
            b.token_ids.push_back(s->tokens[std::size_t(s->n_computed + j)]);
            b.positions.push_back(s->n_computed + j);
        }
        b.qo_indptr.push_back(int32_t(b.token_ids.size()));
        const int kv_len = s->n_computed + n;
        const int n_pages = m_pool.pages_for_tokens(kv_len);
        b.kv_indices.insert(b.kv_indices.end(), s->pages.begin(), s->pages.begin() + n_pages);
        b.kv_indptr.push_back(int32_t(b.kv_indices.size()));
        b.kv_last_page_len.push_back(kv_len - (n_pages - 1) * ps);
        b.seq_lora_slot.push_back(s->slot);
        if (s->scoring()) {  // row j predicts the token after it: prompt rows up to n_prompt - 2 score
            const int first = std::max(s->n_computed, s->n_scored), end = std::min(kv_len, s->n_prompt - 1);
            for (int p = first; p < end; ++p) {
                const int32_t row = b.qo_indptr[b.qo_indptr.size() - 2] + (p - s->n_computed);
                out.scoring.push_back({s, p, int32_t(b.logits_indices.size())});
                b.logits_indices.push_back(row);
            }
        }
        if (kv_len == int(s->tokens.size()) && s->stop.max_tokens > 0) {
            out.sampling_rows.push_back(int32_t(b.logits_indices.size()));
            b.logits_indices.push_back(b.qo_indptr.back() - 1);
            out.sampling.push_back(s);
        }
        out.seqs.push_back(s);
        out.n_tokens.push_back(n);
    }
}

void Scheduler::commit(const StepPlan& plan, std::span<const int32_t> sampled) {
    if (sampled.size() != plan.sampling.size())
        throw_error(ErrorCode::internal, "commit got " + std::to_string(sampled.size()) + " tokens for " +
                                             std::to_string(plan.sampling.size()) + " sampling sequences");
    ++m_step;
    ++m_counters.steps;
    std::size_t k = 0;
    for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
        Sequence* s = plan.seqs[i];
        s->n_computed += plan.n_tokens[i];
        m_counters.computed_tokens += plan.n_tokens[i];
        if (s->prompt_logprobs >= 0) s->n_scored = std::max(s->n_scored, std::min(s->n_computed, s->n_prompt - 1));
        if (s->stop.max_tokens == 0 && s->n_computed == int(s->tokens.size())) {  // scored, nothing to generate
            end(s, FinishReason::length, {});
            continue;
        }
        if (k < plan.sampling.size() && plan.sampling[k] == s) {
            s->tokens.push_back(sampled[k++]);
            ++m_counters.generated_tokens;
            if (s->n_generated() == 1) s->t_first_token = std::chrono::steady_clock::now();
            if (check_stop(*s)) continue;
        }
        cache_full_pages(*s);
    }
}

}  // namespace loradesk::sched
