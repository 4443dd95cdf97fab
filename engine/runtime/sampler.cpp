// Sampling pipeline; see sampler.h for the order and the logprob convention.
#include "runtime/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/error.h"
#include "grammar/grammar_matcher.h"

namespace loradesk::runtime {
namespace {

[[noreturn]] void bad(const std::string& msg) { throw_expected(ErrorCode::invalid_argument, msg); }

}  // namespace

void SamplingParams::validate(int vocab_size) const {
    if (!(temperature >= 0.0f) || !std::isfinite(temperature))
        bad(fmt::format("temperature must be >= 0, got {}", temperature));
    if (!(top_p > 0.0f && top_p <= 1.0f)) bad(fmt::format("top_p must be in (0, 1], got {}", top_p));
    if (!(min_p >= 0.0f && min_p <= 1.0f)) bad(fmt::format("min_p must be in [0, 1], got {}", min_p));
    if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
        bad(fmt::format("repetition_penalty must be > 0, got {}", repetition_penalty));
    if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
        bad(fmt::format("presence_penalty must be in [-2, 2], got {}", presence_penalty));
    if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
        bad(fmt::format("frequency_penalty must be in [-2, 2], got {}", frequency_penalty));
    if (top_logprobs > 20) bad(fmt::format("top_logprobs must be at most 20, got {}", top_logprobs));
    for (auto [tok, bias] : logit_bias) {
        if (tok < 0 || tok >= vocab_size)
            bad(fmt::format("logit_bias names token {} but the vocabulary has {} tokens", tok, vocab_size));
        if (!(bias >= -100.0f && bias <= 100.0f))
            bad(fmt::format("logit_bias for token {} must be in [-100, 100], got {}", tok, bias));
    }
}

void log_softmax(const float* logits, int n, std::vector<float>& out) {
    out.resize(std::size_t(n));
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
    const double lse = double(mx) + std::log(sum);
    for (int i = 0; i < n; ++i) out[std::size_t(i)] = float(double(logits[i]) - lse);
}

Sampler::Sampler(SamplingParams params, const std::vector<int>& prompt_ids)
    : m_params(std::move(params)), m_rng(m_params.seed) {
    std::set<int> uniq(prompt_ids.begin(), prompt_ids.end());
    m_prompt_unique.assign(uniq.begin(), uniq.end());
}

Sampler::~Sampler() = default;

void Sampler::accept(int token) {
    ++m_output_counts[token];
    if (!m_matcher) return;
    m_mask_ready = false;
    // The token came from this step's mask, so the grammar takes it; a token it refuses (EOS after the grammar
    // finished, say) leaves the state as it was, and constraint_finished() ends the request.
    m_matcher->accept_token(token);
}

void Sampler::set_constraint(std::shared_ptr<grammar::GrammarMatcher> matcher) {
    m_matcher = std::move(matcher);
    m_mask_ready = false;
}

bool Sampler::constraint_finished() const { return m_matcher && m_matcher->is_terminated(); }

void Sampler::prepare_mask(int vocab_size, int tokens_left) {
    if (!m_matcher) return;
    m_mask.assign((std::size_t(vocab_size) + 31) / 32, 0u);
    m_matcher->fill_next_token_bitmask(m_mask);
    if (tokens_left < (1 << 30)) restrict_to_budget(tokens_left);
    m_mask_ready = true;
}

void Sampler::restrict_to_budget(int tokens_left) {
    // Each token adds at least a byte, so a grammar whose shortest completion is M bytes closes within M tokens
    // plus EOS. Once the budget comes within kSlack tokens of that, only tokens after which the completion still
    // fits the tokens left (one of them for EOS) stay allowed; the shortest path always qualifies, so the mask
    // never empties. Earlier, no single token is expected to lengthen the completion by more than kSlack bytes.
    // A budget that was too small from the start cannot be met: then the tokens that bring the end nearest stay.
    constexpr int64_t kSlack = 32;
    int64_t fit = int64_t(tokens_left) - 2;  // bytes that may remain after this token
    const int64_t now = int64_t(m_matcher->min_bytes_to_end());
    if (now + kSlack < fit) return;
    // No allowed token lengthens the completion past the budget: nothing to remove (the common case until the
    // last few tokens; the bound is memoised per grammar state).
    if (now + int64_t(m_matcher->max_lengthening(m_mask)) <= fit) return;
    std::vector<std::pair<int32_t, int64_t>>& after = m_budget_scratch;
    after.clear();
    bool eos = false;
    int64_t best = INT64_MAX;
    for (std::size_t w = 0; w < m_mask.size(); ++w) {
        for (uint32_t bits = m_mask[w]; bits; bits &= bits - 1) {
            const int32_t id = int32_t(w * 32 + std::size_t(__builtin_ctz(bits)));
            if (m_matcher->is_eos(id)) {  // set only where the grammar can end
                eos = true;
                continue;
            }
            const int64_t m = int64_t(m_matcher->min_bytes_after(id));
            after.emplace_back(id, m);
            best = std::min(best, m);
        }
    }
    if (!eos) fit = std::max(fit, best);
    for (auto [id, m] : after)
        if (m > fit) m_mask[std::size_t(id) / 32] &= ~(1u << (id & 31));
}

void Sampler::apply_mask(std::vector<float>& logits) const {
    const std::size_t n = logits.size();
    for (std::size_t w = 0; w < m_mask.size(); ++w) {
        const uint32_t bits = m_mask[w];
        if (bits == ~0u) continue;
        for (std::size_t b = 0; b < 32 && w * 32 + b < n; ++b)
            if (!(bits >> b & 1u)) logits[w * 32 + b] = -INFINITY;
    }
    for (std::size_t i = m_mask.size() * 32; i < n; ++i) logits[i] = -INFINITY;  // ids past the tokenizer's
}

double Sampler::next_uniform() { return double(m_rng() >> 11) * 0x1.0p-53; }

void Sampler::apply_processors(std::vector<float>& logits) const {
    const int n = int(logits.size());
    for (auto [tok, bias] : m_params.logit_bias)
        if (tok >= 0 && tok < n) logits[std::size_t(tok)] += bias;
    if (m_params.repetition_penalty != 1.0f) {
        std::set<int> seen(m_prompt_unique.begin(), m_prompt_unique.end());
        for (auto& [tok, count] : m_output_counts) seen.insert(tok);
        for (int tok : seen) {
            if (tok < 0 || tok >= n) continue;
            float& l = logits[std::size_t(tok)];
            l = l > 0 ? l / m_params.repetition_penalty : l * m_params.repetition_penalty;
        }
    }
    if (m_params.presence_penalty != 0.0f || m_params.frequency_penalty != 0.0f) {
        for (auto& [tok, count] : m_output_counts) {
            if (tok < 0 || tok >= n) continue;
            logits[std::size_t(tok)] -= m_params.presence_penalty + m_params.frequency_penalty * float(count);
        }
    }
}

bool Sampler::needs_logits() const {
    const SamplingParams& p = m_params;
    return p.temperature > kGreedyTemperature || !p.logit_bias.empty() || p.repetition_penalty != 1.0f ||
           p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f || p.top_logprobs >= 0;
}

int Sampler::draw(int vocab_size) {
    // Candidates in descending processed-logit order (index breaks ties), sorted only as far as the walks
    // below look: top-p, min-p and the draw all stop early on a peaked distribution, so a 150 k vocabulary
    // costs one exp pass and a short partial sort instead of a full sort per row.
    std::vector<float>& logits = m_logits;
    std::vector<int>& order = m_order;
    order.resize(std::size_t(vocab_size));
    std::iota(order.begin(), order.end(), 0);
    auto by_logit = [&](int a, int b) {
        return logits[std::size_t(a)] != logits[std::size_t(b)] ? logits[std::size_t(a)] > logits[std::size_t(b)]
                                                                : a < b;
    };
    int keep = vocab_size;
    if (m_params.top_k > 0 && m_params.top_k < vocab_size) {
        keep = m_params.top_k;
        std::nth_element(order.begin(), order.begin() + keep - 1, order.end(), by_logit);
    }
    int sorted = 0;  // order[0, sorted) is in final order
    auto sort_upto = [&](int k) {
        k = std::min(k, keep);
        if (k <= sorted) return;
        k = std::max(k, std::min(keep, sorted * 4 + 64));  // grow geometrically
        std::partial_sort(order.begin() + sorted, order.begin() + k, order.begin() + keep, by_logit);
        sorted = k;
    };
    sort_upto(1);
    const double inv_t = 1.0 / double(m_params.temperature);
    const double mx = double(logits[std::size_t(order[0])]);
    auto weight = [&](int i) { return std::exp((double(logits[std::size_t(order[std::size_t(i)])]) - mx) * inv_t); };
    double z = 0;
    for (int i = 0; i < keep; ++i) z += weight(i);
    auto prob = [&](int i) {
        sort_upto(i + 1);
        return weight(i) / z;
    };
    const int kept = keep;
    if (m_params.top_p < 1.0f) {  // keep the smallest prefix whose mass reaches top_p
        double cum = 0;
        int k = 0;
        while (k < keep && cum < double(m_params.top_p)) cum += prob(k++);
        keep = std::max(k, 1);
    }
    if (m_params.min_p > 0.0f) {  // relative to the most likely token, so renormalising is irrelevant
        const double floor = double(m_params.min_p) * prob(0);
        int k = 1;
        while (k < keep && prob(k) >= floor) ++k;
        keep = k;
    }
    double mass = 1.0;  // z already sums the top-k set
    if (keep < kept) {
        mass = 0;
        for (int i = 0; i < keep; ++i) mass += prob(i);
    }
    double u = next_uniform() * mass;
    for (int i = 0; i < keep; ++i) {
        u -= prob(i);
        if (u < 0) return order[std::size_t(i)];
    }
    sort_upto(keep);
    return order[std::size_t(keep - 1)];
}

SampleResult Sampler::sample(const float* raw, int vocab_size) {
    SampleResult r;
    m_logits.assign(raw, raw + vocab_size);
    if (m_matcher) {
        if (!m_mask_ready) prepare_mask(vocab_size);
        apply_mask(m_logits);
    }
    apply_processors(m_logits);
    if (m_params.temperature <= kGreedyTemperature) {
        r.token =
            int(std::max_element(m_logits.begin(), m_logits.end()) - m_logits.begin());  // first maximum wins ties
    } else {
        r.token = draw(vocab_size);
    }
    if (m_params.top_logprobs >= 0) {
        std::vector<float> lp;
        log_softmax(raw, vocab_size, lp);
        r.logprob = lp[std::size_t(r.token)];
        const int n_top = std::min(m_params.top_logprobs, vocab_size);
        std::vector<int> idx(static_cast<std::size_t>(vocab_size));
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + n_top, idx.end(), [&](int a, int b) {
            return lp[std::size_t(a)] != lp[std::size_t(b)] ? lp[std::size_t(a)] > lp[std::size_t(b)] : a < b;
        });
        for (int i = 0; i < n_top; ++i) r.top.push_back({idx[std::size_t(i)], lp[std::size_t(idx[std::size_t(i)])]});
    }
    return r;
}

}  // namespace loradesk::runtime
