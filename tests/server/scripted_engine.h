// A scripted, deterministic test double of api::Engine for the server tests and the JS SDK test server.
// Replies are fixed token pieces; directives in the prompt text pick behaviours: #busy (429), #overflow
// (context too long), #unavailable (503), #fail (error after 2 tokens), #engine-cancel, #slow (30 ms per
// token), #stall (first token after 400 ms), #long (40 tokens), #tool, #think, #utf8, #scripted (the pieces
// given to set_scripted_reply). One prompt token per word; prompts of max_context (4096) words or more overflow
// the context. render_chat writes tools into the prompt and an empty think block when enable_thinking is false,
// as Qwen3's template does, and opens <think> when the text given to set_chat_template has one, as thinking
// releases do. prompt_logprobs >= 0 gives scripted prompt scores first (see prompt_scores in the .cpp); a seed
// lowers the token logprobs by 0.1 (seed % 7), so best_of candidates differ. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <mutex>

#include "api/engine.h"

namespace loradesk::testing {

class ScriptedEngine : public api::Engine {
  public:
    ScriptedEngine();

    Result<std::shared_ptr<api::RequestStream>> submit(api::GenerateRequest request) override;
    Status load_adapter(const std::string& name, const std::string& path) override;
    Status unload_adapter(const std::string& name) override;
    Status pin_adapter(const std::string& name, bool pinned) override;
    Status set_alias(const std::string& alias, const std::string& name) override;
    std::vector<api::AdapterInfo> adapters() const override;
    Result<api::AdapterInfo> adapter(const std::string& name_or_alias) const override;
    api::ModelInfo model() const override;
    api::EngineStats stats() const override;
    Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) const override;
    Result<std::string> detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
    Result<std::string> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const override;
    // The catalog side is not scripted: imports load each subfolder, removal unloads, no history.
    Status import_adapters(const std::string& folder) override;
    Status remove_adapter(const std::string& name) override { return unload_adapter(name); }
    Result<api::AdapterDetails> adapter_details(const std::string& name_or_alias) const override;
    Result<std::vector<api::StatsPoint>> adapter_history(const std::string&, int) const override {
        return std::vector<api::StatsPoint>{};
    }
    void shutdown() override {}

    // What tests inspect.
    std::vector<api::GenerateRequest> requests() const;
    int cancelled() const { return m_cancelled->load(); }
    int live_streams() const { return m_live->load(); }
    int finished() const { return m_finished->load(); }
    void set_cached_tokens(int n) { m_cached_tokens = n; }
    void set_token_delay_ms(int ms) { m_default_delay_ms = ms; }
    // What model().chat_template reports (empty by default, as before formats were chosen per template) and
    // the reply that #scripted prompts get, for tests of the per-family parsers through the routes.
    void set_chat_template(std::string text) {
        std::lock_guard lock(m_mutex);
        m_chat_template = std::move(text);
    }
    // What model() reports as the checkpoint's quantization ("" = unquantized, the default).
    void set_quantization(std::string method, std::string detail) {
        std::lock_guard lock(m_mutex);
        m_quantization = std::move(method);
        m_quantization_detail = std::move(detail);
    }
    void set_scripted_reply(std::vector<std::string> pieces) {
        std::lock_guard lock(m_mutex);
        m_scripted_reply = std::move(pieces);
    }

    static constexpr int32_t kBos = 1;

  private:
    const api::AdapterInfo* find(const std::string& name_or_alias) const;  // m_mutex held

    mutable std::mutex m_mutex;
    std::string m_quantization, m_quantization_detail;
    std::map<std::string, api::AdapterInfo> m_adapters;
    std::vector<api::GenerateRequest> m_requests;
    std::shared_ptr<std::atomic<int>> m_cancelled = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> m_live = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> m_finished = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> m_cached_tokens{0};
    std::atomic<int> m_default_delay_ms{0};
    std::string m_chat_template;
    std::vector<std::string> m_scripted_reply;
};

}  // namespace loradesk::testing
