// ScriptedEngine: a deterministic api::Engine test double for the UI tests. It keeps a small adapter
// table, answers every generation with a scripted reply ("<model> says: <last user text>") streamed word
// by word, fails the way the real engine does (unknown adapter, adapter for another base model) and
// records every mutating call so tests can assert what the views asked for. Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

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
    Status import_adapters(const std::string& folder) override;
    Status remove_adapter(const std::string& name) override;
    Result<api::AdapterDetails> adapter_details(const std::string& name_or_alias) const override;
    Result<std::vector<api::StatsPoint>> adapter_history(const std::string& name_or_alias, int minutes) const override;
    api::ModelInfo model() const override;
    api::EngineStats stats() const override;
    Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) const override;
    Result<std::string> detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
    Result<std::string> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const override;
    void shutdown() override;

    std::vector<std::string> calls() const;  // "load de /path", "pin de 1", ...
    void setTokensPerSecond(double tps);
    static std::string replyFor(const std::string& model, const std::string& userText);

  private:
    api::AdapterInfo* find(const std::string& name_or_alias);
    const api::AdapterInfo* find(const std::string& name_or_alias) const;
    void record(std::string call);

    mutable std::mutex m_mutex;
    std::vector<api::AdapterInfo> m_adapters;
    std::vector<std::string> m_calls;
    api::EngineStats m_stats;
    bool m_shutdown = false;
};

api::AdapterInfo makeAdapter(const std::string& name, const std::string& base, int rank, const std::string& tier,
                             bool pinned, uint64_t requests);

}  // namespace loradesk::testing
