// Token sampling for one sequence: logit processors (logit_bias, repetition / presence / frequency
// penalties), temperature, top-k, top-p, min-p, a per-request seeded RNG and logprobs. No global
// state: a Sampler owns its RNG, so a request with a seed reproduces regardless of batch mates.
//
// Order (as vLLM): logit_bias -> repetition penalty -> presence/frequency penalties -> [greedy argmax
// when temperature == 0] -> temperature -> top-k -> top-p -> min-p -> draw.
// A grammar constraint (set_constraint) removes every token the grammar does not allow before anything else;
// its mask is computed by prepare_mask(), which the engine loop runs on a pool while the model step runs.
// Logprobs are the RAW model log-probabilities (log_softmax of the logits before any processing),
// vLLM's default `raw_logprobs` mode: they describe the model, not the sampling settings.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loradesk::grammar {
class GrammarMatcher;
}

namespace loradesk::runtime {

struct SamplingParams {
    float temperature = 1.0f;                       // 0 = greedy
    int top_k = 0;                                  // <= 0: off
    float top_p = 1.0f;                             // (0, 1]; 1 = off
    float min_p = 0.0f;                             // [0, 1]; 0 = off
    float repetition_penalty = 1.0f;                // HF: seen (prompt + output) logits >0 divided, <0 multiplied
    float presence_penalty = 0.0f;                  // OpenAI: -= presence * [count > 0] over output tokens
    float frequency_penalty = 0.0f;                 // OpenAI: -= frequency * count over output tokens
    std::vector<std::pair<int, float>> logit_bias;  // token -> additive bias
    uint64_t seed = 0;
    int top_logprobs = -1;  // -1: no logprobs; 0..N: sampled token's logprob plus N alternatives

    // Throws Error(invalid_argument) naming the parameter when a value is out of range.
    void validate(int vocab_size) const;
};

struct TokenLogprob {
    int token = 0;
    float logprob = 0.0f;
};

struct SampleResult {
    int token = 0;
    float logprob = 0.0f;           // raw model logprob of `token` (when top_logprobs >= 0)
    std::vector<TokenLogprob> top;  // the top_logprobs most likely tokens, most likely first
};

class Sampler {
  public:
    Sampler(SamplingParams params, const std::vector<int>& prompt_ids);
    ~Sampler();

    // Picks the next token from one row of logits [vocab_size]. Does not record it: call accept().
    SampleResult sample(const float* logits, int vocab_size);
    // False when the choice is the row's argmax (greedy, no processors, no logprobs): then the caller may take the
    // argmax from the device and skip the row (ModelRunner::forward_sampled), within mask() when constrained.
    bool needs_logits() const;
    // Records an emitted token (for penalties; a constraint advances over it).
    void accept(int token);

    // Structured output: from now on only tokens `matcher` allows are drawn, EOS only where its grammar ends.
    void set_constraint(std::shared_ptr<grammar::GrammarMatcher> matcher);
    bool constrained() const { return m_matcher != nullptr; }
    // Computes the allowed tokens of the coming step (any thread, not concurrently with sample/accept on this
    // sampler); sample() computes them itself when this was not called. `tokens_left`: completion tokens the
    // request may still generate; when only just enough are left to close the grammar, the mask keeps to tokens
    // that bring its end nearer, so that max_tokens cannot cut a structured output short.
    void prepare_mask(int vocab_size, int tokens_left = 1 << 30);
    // The prepared mask: bit (id % 32) of word id / 32 set = allowed. Empty when unconstrained or unprepared.
    std::span<const uint32_t> mask() const {
        return m_mask_ready ? std::span<const uint32_t>(m_mask) : std::span<const uint32_t>();
    }
    // The grammar is complete and accepts nothing more (its EOS was drawn, or no byte can follow).
    bool constraint_finished() const;

    const SamplingParams& params() const { return m_params; }
    // Applies logit_bias and the penalties in place (exposed for tests and the CUDA sampler's checks).
    void apply_processors(std::vector<float>& logits) const;

  private:
    static constexpr float kGreedyTemperature = 1e-5f;  // at or below: greedy
    double next_uniform();                              // [0, 1) from the request's own RNG
    int draw(int vocab_size);                           // temperature / top-k / top-p / min-p draw over m_logits

    void apply_mask(std::vector<float>& logits) const;
    // Keeps, of the mask, the tokens after which the grammar can still end within `tokens_left` tokens.
    void restrict_to_budget(int tokens_left);

    SamplingParams m_params;
    std::mt19937_64 m_rng;
    std::shared_ptr<grammar::GrammarMatcher> m_matcher;  // null: unconstrained
    std::vector<uint32_t> m_mask;                        // allowed tokens of the coming step
    std::vector<std::pair<int32_t, int64_t>> m_budget_scratch;
    bool m_mask_ready = false;
    std::vector<int> m_prompt_unique;              // distinct prompt tokens (repetition penalty)
    std::unordered_map<int, int> m_output_counts;  // emitted token -> count
    std::vector<float> m_logits;                   // scratch: the processed row
    std::vector<int> m_order;                      // scratch: candidates by processed logit
};

// log_softmax of logits into out (same length).
void log_softmax(const float* logits, int n, std::vector<float>& out);

}  // namespace loradesk::runtime
