// StreamImpl: the text layer of one request. Turns the engine loop's token ids into the facade's
// events: incremental detokenization (UTF-8 safe), stop strings (held back until they can no longer
// match; on a match the sequence is finished through the loop and later tokens are dropped), logprob
// token texts, and usage/timings on finish. Runs on the consumer's thread (HTTP worker, UI worker),
// never on the engine loop. One consumer at a time; cancel() may be called from any thread.
#pragma once

#include <deque>
#include <memory>
#include <mutex>

#include "api/engine.h"
#include "lora/adapter_registry.h"
#include "sched/engine_loop.h"
#include "tokenizer/incremental_detokenizer.h"

namespace loradesk::api {

struct EngineCore;

class StreamImpl final : public RequestStream {
  public:
    StreamImpl(std::shared_ptr<EngineCore> core, std::shared_ptr<sched::RequestChannel> channel, SubmitInfo info,
               const GenerateRequest& request, const std::vector<int32_t>& prompt, lora::AdapterLease lease);
    ~StreamImpl() override;

    const SubmitInfo& info() const override { return m_info; }
    std::optional<Event> next(std::chrono::milliseconds timeout) override;
    void cancel() override;

  private:
    void on_token(const sched::TokenOut& t);
    void on_finish(const sched::FinishOut& f);
    void on_prompt_logprobs(const sched::PromptLogprobsOut& p);
    void flush_prompt_logprobs();
    void emit_text(std::string text, std::vector<int32_t> ids, std::vector<TokenLogprob> logprobs);
    TopLogprob describe(int32_t id, float logprob) const;
    void account_finish(const sched::FinishOut& f);

    std::shared_ptr<EngineCore> m_core;
    std::shared_ptr<sched::RequestChannel> m_channel;
    SubmitInfo m_info;
    tokenizer::IncrementalDetokenizer m_detok;
    tokenizer::StopStringMatcher m_stops;
    bool m_include_stop;
    // With skip_special_tokens=false (tool requests whose markers are special tokens), the token that ends the
    // sequence (EOS, a stop_token_id) would otherwise be written out as "</s>" or "<|eot_id|>"; as in vLLM,
    // its text is left out. These are the ids that end it once min_tokens are generated.
    std::vector<int32_t> m_silent_end_ids;
    int m_min_tokens = 0;
    bool m_want_logprobs;
    bool m_want_prompt_logprobs;
    bool m_prompt_logprobs_sent = false;
    std::vector<TokenLogprob> m_prompt_logprobs;  // gathered over the prefill's steps
    lora::AdapterLease m_lease;
    std::deque<Event> m_ready;
    bool m_stopped_by_string = false;
    std::string m_stop_string;
    bool m_finished = false;
    bool m_accounted = false;  // counters and statistics updated for this request
    int m_n_generated = 0;     // tokens seen so far (for a stream dropped before its finish)
    std::mutex m_cancel_mutex;
};

}  // namespace loradesk::api
