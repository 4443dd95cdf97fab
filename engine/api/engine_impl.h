// EngineImpl: the facade over one EngineCore. Every method catches what the layers below throw and
// returns it as a Status; nothing throws across. Thread-safe (the core's parts are).
#pragma once

#include <memory>

#include "api/engine.h"
#include "api/engine_core.h"

namespace loradesk::api {

class EngineImpl final : public Engine {
  public:
    explicit EngineImpl(std::shared_ptr<EngineCore> core) : m_core(std::move(core)) {}
    ~EngineImpl() override { shutdown(); }

    Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) override;

    Status load_adapter(const std::string& name, const std::string& path) override;
    Status unload_adapter(const std::string& name) override;
    Status pin_adapter(const std::string& name, bool pinned) override;
    Status set_alias(const std::string& alias, const std::string& name) override;
    std::vector<AdapterInfo> adapters() const override;
    Result<AdapterInfo> adapter(const std::string& name_or_alias) const override;

    Status import_adapters(const std::string& folder) override;
    Status remove_adapter(const std::string& name) override;
    Result<AdapterDetails> adapter_details(const std::string& name_or_alias) const override;
    Result<std::vector<StatsPoint>> adapter_history(const std::string& name_or_alias, int minutes) const override;

    ModelInfo model() const override;
    EngineStats stats() const override;

    Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) const override;
    Result<std::string> detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
    Result<std::string> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const override;

    void shutdown() override;

    // One adapter folder poll now, on the caller's thread (tests, a UI "rescan"); an empty report when
    // the engine has no adapter_dirs or is shutting down. The background poll runs regardless.
    AdapterFolderWatch::PollReport poll_adapter_folders_now();
    // Waits until every adapter folder queued for reading (after startup) has been read (tests, bench).
    void wait_adapters_read() const;

  private:
    std::shared_ptr<RequestStream> submit_or_throw(GenerateRequest& request);
    // `prompt_tail` gets a chat prompt's last rendered bytes (SubmitInfo::prompt_tail).
    std::vector<int32_t> build_prompt(const GenerateRequest& request, std::string& prompt_tail) const;
    AdapterInfo describe(const lora::RegisteredAdapter& a) const;
    static AdapterInfo rejected_info(const RejectedAdapter& r);  // a folder that failed validation, as listed
    // Running / waiting sequences per adapter as the engine loop last counted them.
    void apply_queue_counts(std::vector<AdapterInfo>& infos) const;
    // not_found with the reason when `name` is listed as an adapter folder that cannot be served.
    void throw_if_listed_unservable(const std::string& name) const;

    std::shared_ptr<EngineCore> m_core;
};

}  // namespace loradesk::api
