// ScriptedEngine: the one deterministic test double of api::Engine, for the server routes, the socket tests,
// the JS SDK test server and the desktop UI. Adapter management keeps the real engine's contract (engine.h,
// EngineImpl): a taken name or alias is a conflict, a missing folder is not_found, unload stops serving the
// name, a listed adapter with compatible == false stands for a folder that failed validation and fails to
// load with its reason. Replies are scripted: directives in the prompt text pick behaviours (see
// scripted_reply.cpp): #busy (429), #overflow (context too long), #unavailable (503), #fail (error after 2
// tokens), #engine-cancel, #slow (30 ms per token), #stall (first token after 400 ms), #long (40 tokens),
// #tool, #think, #utf8, #scripted (the pieces given to set_scripted_reply); otherwise the fixture's reply style.
// One prompt token per word; a prompt of max_context words or more overflows. Every mutating call is recorded
// in calls() ("load de /path", "pin de 1", "submit base"). Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/engine.h"

namespace loradesk::testing {

enum class ReplyStyle {
    hello,  // "Hello", ",", " world", "!" (the server tests' default)
    echo,   // "<adapter or base> says: <last user text>", word by word (the UI tests' chat)
};

// What the double serves: its model, the adapters listed at start, the statistics it reports (running adds the
// live streams) and how it answers.
struct ScriptedFixture {
    api::ModelInfo model;
    std::vector<api::AdapterInfo> adapters;
    api::EngineStats stats;
    ReplyStyle reply = ReplyStyle::hello;
    double first_token_ms = 1.0;  // reported time to first token on top of the token delay
};

// "tiny-base" with sql-lora (alias sql, GPU), chat-lora (disk) and dora-lora (rejected: DoRA).
ScriptedFixture tiny_base_fixture();
// "Qwen3-0.6B" with de (alias german, pinned, GPU), es (CPU), it (disk), bofh (GPU) and llama-sql (rejected:
// another base model), plus busy-looking statistics, as the desktop pages show them.
ScriptedFixture desktop_fixture();
// An adapter row with plausible totals derived from `requests` (a tier named as tier_name() writes it).
api::AdapterInfo make_adapter(const std::string& name, const std::string& base, int rank, const std::string& tier,
                              bool pinned, uint64_t requests);
// The text ReplyStyle::echo streams for a request to `adapter` ("" for the base model).
std::string echo_reply(const std::string& adapter, const std::string& user_text);

class ScriptedEngine : public api::Engine {
  public:
    explicit ScriptedEngine(ScriptedFixture fixture = tiny_base_fixture());

    Result<std::shared_ptr<api::RequestStream>> submit(api::GenerateRequest request) override;
    Status load_adapter(const std::string& name, const std::string& path) override;
    Status unload_adapter(const std::string& name) override;
    Status pin_adapter(const std::string& name, bool pinned) override;
    Status set_alias(const std::string& alias, const std::string& name) override;
    std::vector<api::AdapterInfo> adapters() const override;
    Result<api::AdapterInfo> adapter(const std::string& name_or_alias) const override;
    Status import_adapters(const std::string& folder) override;  // loads each subfolder with an adapter_config.json
    Status remove_adapter(const std::string& name) override;
    Result<api::AdapterDetails> adapter_details(const std::string& name_or_alias) const override;
    Result<std::vector<api::StatsPoint>> adapter_history(const std::string& name_or_alias, int minutes) const override;
    api::ModelInfo model() const override;
    api::EngineStats stats() const override;
    Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) const override;
    Result<std::string> detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
    // Tools are written into the prompt and enable_thinking=false writes an empty think block, as Qwen3's template
    // does; a chat template given to set_chat_template that has <think> opens the block, as thinking releases do.
    Result<std::string> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const override;
    void shutdown() override;  // later submits fail with unavailable

    // What tests inspect.
    std::vector<std::string> calls() const;
    std::vector<api::GenerateRequest> requests() const;
    int cancelled() const { return m_cancelled->load(); }
    int live_streams() const { return m_live->load(); }
    int finished() const { return m_finished->load(); }

    // What tests set.
    void set_cached_tokens(int n) { m_cached_tokens = n; }
    void set_token_delay_ms(int ms) { m_default_delay_ms = ms; }
    void set_tokens_per_second(double tps);
    // What model().chat_template reports, for tests of the per-family parsers through the routes.
    void set_chat_template(std::string text);
    // What model() reports as the checkpoint's quantization ("" = unquantized, the default).
    void set_quantization(std::string method, std::string detail);
    // The reply of #scripted prompts.
    void set_scripted_reply(std::vector<std::string> pieces);

    static constexpr int32_t kBos = 1;

  private:
    struct Served;                                                         // what submit resolved a request's model to
    Result<Served> resolve_model(const std::string& model) const;          // m_mutex held
    const api::AdapterInfo* find(const std::string& name_or_alias) const;  // m_mutex held
    api::AdapterInfo* find(const std::string& name_or_alias);              // m_mutex held
    void record(std::string call);                                         // m_mutex held

    const ScriptedFixture m_fixture;
    mutable std::mutex m_mutex;
    std::map<std::string, api::AdapterInfo> m_adapters;  // by name, listed in name order
    std::vector<api::GenerateRequest> m_requests;
    std::vector<std::string> m_calls;
    double m_tokens_per_second;
    std::string m_chat_template;
    std::string m_quantization, m_quantization_detail;
    std::vector<std::string> m_scripted_reply;
    bool m_shutdown = false;
    std::shared_ptr<std::atomic<int>> m_cancelled = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> m_live = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> m_finished = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> m_cached_tokens{0};
    std::atomic<int> m_default_delay_ms{0};
};

}  // namespace loradesk::testing
