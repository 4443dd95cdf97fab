// The scripted engine: fixed adapters, word-by-word replies, recorded calls.
#include "scripted_engine.h"

#include <algorithm>
#include <deque>
#include <sstream>

namespace loradesk::testing {

namespace {

constexpr const char* kBase = "Qwen/Qwen3-0.6B";

class ScriptedStream : public api::RequestStream {
  public:
    ScriptedStream(api::SubmitInfo info, std::deque<api::Event> events)
        : m_info(std::move(info)), m_events(std::move(events)) {}
    const api::SubmitInfo& info() const override { return m_info; }
    std::optional<api::Event> next(std::chrono::milliseconds) override {
        std::lock_guard lock(m_mutex);
        if (m_cancelled && !m_finished) {
            m_finished = true;
            api::FinishEvent f;
            f.reason = api::FinishReason::cancelled;
            return api::Event(f);
        }
        if (m_events.empty()) return std::nullopt;
        api::Event e = std::move(m_events.front());
        m_events.pop_front();
        if (!std::holds_alternative<api::TokenEvent>(e)) m_finished = true;
        return e;
    }
    void cancel() override {
        std::lock_guard lock(m_mutex);
        m_cancelled = true;
    }

  private:
    std::mutex m_mutex;
    api::SubmitInfo m_info;
    std::deque<api::Event> m_events;
    bool m_cancelled = false;
    bool m_finished = false;
};

std::string lastUserText(const api::GenerateRequest& r) {
    if (r.prompt) return *r.prompt;
    if (r.messages && r.messages->is_array())
        for (auto it = r.messages->rbegin(); it != r.messages->rend(); ++it)
            if ((*it).value("role", "") == "user") return (*it).value("content", "");
    return {};
}

api::Tier tierFrom(const std::string& name) {
    for (api::Tier t : {api::Tier::base, api::Tier::gpu, api::Tier::cpu, api::Tier::disk})
        if (api::tier_name(t) == name) return t;
    return api::Tier::disk;
}

}  // namespace

api::AdapterInfo makeAdapter(const std::string& name, const std::string& base, int rank, const std::string& tier,
                             bool pinned, uint64_t requests) {
    api::AdapterInfo a;
    a.name = name;
    a.digest = "sha256:" + std::string(64 - name.size(), '0') + name;
    a.path = "/adapters/" + name;
    a.base_model = base;
    a.rank = rank;
    a.alpha = float(rank * 2);
    a.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    a.size_bytes = std::size_t(rank) * 1024 * 1024;
    a.tier = tierFrom(tier);
    a.pinned = pinned;
    a.requests_total = requests;
    a.generated_tokens_total = requests * 40;
    a.prompt_tokens_total = requests * 100;
    a.cached_tokens_total = requests * 30;
    a.last_used_unix = requests ? 1795000000 : 0;
    a.created_unix = 1794000000;
    return a;
}

ScriptedEngine::ScriptedEngine() {
    m_adapters = {makeAdapter("de", kBase, 8, "gpu", true, 120), makeAdapter("es", kBase, 16, "cpu", false, 40),
                  makeAdapter("it", kBase, 8, "disk", false, 0), makeAdapter("bofh", kBase, 32, "gpu", false, 7)};
    api::AdapterInfo llama = makeAdapter("llama-sql", "meta-llama/Llama-3.2-1B", 16, "disk", false, 0);
    llama.compatible = false;
    llama.incompatibility =
        "targets q_proj with in_features 2048 but the base model has 1024 (is it for another base model?)";
    m_adapters.push_back(llama);
    m_adapters[0].aliases = {"german"};
    m_stats.running = 2;
    m_stats.waiting = 1;
    m_stats.kv_pages_total = 1000;
    m_stats.kv_pages_free = 600;
    m_stats.kv_pages_cached = 150;
    m_stats.prompt_tokens_total = 4000;
    m_stats.cached_tokens_total = 1000;
    m_stats.generated_tokens_total = 6000;
    m_stats.tokens_per_second = 42.5;
    m_stats.gpu_slots_used = 2;
    m_stats.cpu_adapters = 1;
}

void ScriptedEngine::record(std::string call) { m_calls.push_back(std::move(call)); }

std::vector<std::string> ScriptedEngine::calls() const {
    std::lock_guard lock(m_mutex);
    return m_calls;
}

void ScriptedEngine::setTokensPerSecond(double tps) {
    std::lock_guard lock(m_mutex);
    m_stats.tokens_per_second = tps;
}

std::string ScriptedEngine::replyFor(const std::string& model, const std::string& userText) {
    return (model.empty() ? std::string("base") : model) + " says: " + userText;
}

api::AdapterInfo* ScriptedEngine::find(const std::string& key) {
    for (auto& a : m_adapters)
        if (a.name == key || std::find(a.aliases.begin(), a.aliases.end(), key) != a.aliases.end()) return &a;
    return nullptr;
}

const api::AdapterInfo* ScriptedEngine::find(const std::string& key) const {
    return const_cast<ScriptedEngine*>(this)->find(key);
}

Result<std::shared_ptr<api::RequestStream>> ScriptedEngine::submit(api::GenerateRequest request) {
    std::lock_guard lock(m_mutex);
    if (m_shutdown) return Status::failure(ErrorCode::unavailable, "the engine is shutting down");
    std::string adapterName;
    if (!request.model.empty() && request.model != "base") {
        const api::AdapterInfo* a = find(request.model);
        if (!a) return Status::failure(ErrorCode::not_found, "adapter '" + request.model + "' is not registered");
        if (!a->compatible)
            return Status::failure(ErrorCode::unsupported, "adapter '" + a->name + "' " + a->incompatibility);
        adapterName = a->name;
    }
    record("submit " + (adapterName.empty() ? std::string("base") : adapterName));
    api::SubmitInfo info;
    info.request_id = "req-" + std::to_string(m_calls.size());
    info.adapter = adapterName;
    info.tier = adapterName.empty() ? api::Tier::base : find(adapterName)->tier;
    const std::string reply = replyFor(adapterName, lastUserText(request));
    info.prompt_tokens = int(reply.size() / 4) + 1;
    std::deque<api::Event> events;
    std::istringstream words(reply);
    std::string word;
    int n = 0;
    for (bool first = true; words >> word; first = false, ++n) {
        api::TokenEvent t;
        t.token_ids = {n};
        t.text = (first ? "" : " ") + word;
        events.emplace_back(std::move(t));
    }
    api::FinishEvent f;
    f.usage = {info.prompt_tokens, 0, n};
    f.ttft_ms = 12.5;
    f.latency_ms = 40;
    events.emplace_back(f);
    return std::shared_ptr<api::RequestStream>(std::make_shared<ScriptedStream>(info, std::move(events)));
}

Status ScriptedEngine::load_adapter(const std::string& name, const std::string& path) {
    std::lock_guard lock(m_mutex);
    record("load " + name + " " + path);
    if (api::AdapterInfo* a = find(name)) {
        if (!a->compatible)
            return Status::failure(ErrorCode::unsupported, "adapter '" + name + "' " + a->incompatibility);
        a->tier = api::Tier::gpu;
        return Status::success();
    }
    if (path.empty())
        return Status::failure(ErrorCode::not_found, "adapter '" + name + "' is not registered; give its folder");
    m_adapters.push_back(makeAdapter(name, kBase, 8, "cpu", false, 0));
    return Status::success();
}

Status ScriptedEngine::unload_adapter(const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("unload " + name);
    api::AdapterInfo* a = find(name);
    if (!a) return Status::failure(ErrorCode::not_found, "adapter '" + name + "' is not registered");
    a->tier = api::Tier::disk;
    a->pinned = false;
    return Status::success();
}

Status ScriptedEngine::pin_adapter(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    record("pin " + name + " " + (pinned ? "1" : "0"));
    api::AdapterInfo* a = find(name);
    if (!a) return Status::failure(ErrorCode::not_found, "adapter '" + name + "' is not registered");
    a->pinned = pinned;
    if (pinned) a->tier = api::Tier::gpu;
    return Status::success();
}

Status ScriptedEngine::set_alias(const std::string& alias, const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("alias " + alias + " " + name);
    api::AdapterInfo* a = find(name);
    if (!a) return Status::failure(ErrorCode::not_found, "adapter '" + name + "' is not registered");
    if (find(alias)) return Status::failure(ErrorCode::conflict, "the name '" + alias + "' is already taken");
    a->aliases.push_back(alias);
    return Status::success();
}

std::vector<api::AdapterInfo> ScriptedEngine::adapters() const {
    std::lock_guard lock(m_mutex);
    return m_adapters;
}

Result<api::AdapterInfo> ScriptedEngine::adapter(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    if (const api::AdapterInfo* a = find(key)) return *a;
    return Status::failure(ErrorCode::not_found, "adapter '" + key + "' is not registered");
}

Status ScriptedEngine::import_adapters(const std::string& folder) {
    std::lock_guard lock(m_mutex);
    record("import " + folder);
    if (folder.find("missing") != std::string::npos)
        return Status::failure(ErrorCode::not_found, "no adapter_config.json under " + folder);
    const std::string name = folder.substr(folder.find_last_of('/') + 1);
    if (!find(name)) m_adapters.push_back(makeAdapter(name, kBase, 4, "disk", false, 0));
    return Status::success();
}

Status ScriptedEngine::remove_adapter(const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("remove " + name);
    auto it =
        std::find_if(m_adapters.begin(), m_adapters.end(), [&](const api::AdapterInfo& a) { return a.name == name; });
    if (it == m_adapters.end())
        return Status::failure(ErrorCode::not_found, "adapter '" + name + "' is not registered");
    m_adapters.erase(it);
    return Status::success();
}

Result<api::AdapterDetails> ScriptedEngine::adapter_details(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    const api::AdapterInfo* a = find(key);
    if (!a) return Status::failure(ErrorCode::not_found, "adapter '" + key + "' is not registered");
    api::AdapterDetails d;
    d.info = *a;
    d.config = {{"peft_type", "LORA"},
                {"r", a->rank},
                {"lora_alpha", a->alpha},
                {"base_model_name_or_path", a->base_model},
                {"target_modules", a->targets}};
    d.versions = {{a->digest, a->created_unix, true}, {"sha256:older", a->created_unix - 86400, false}};
    d.recent_events = {"2026-11-22 06:40:01 load " + a->name, "2026-11-22 06:30:00 import " + a->name};
    return d;
}

Result<std::vector<api::StatsPoint>> ScriptedEngine::adapter_history(const std::string& key, int minutes) const {
    std::lock_guard lock(m_mutex);
    if (!find(key)) return Status::failure(ErrorCode::not_found, "adapter '" + key + "' is not registered");
    std::vector<api::StatsPoint> out;
    const int n = std::min(minutes, 30);
    for (int i = n - 1; i >= 0; --i) {  // newest first, as a catalog query might return them
        api::StatsPoint p;
        p.minute_unix = 1795000000 - int64_t(i) * 60;
        p.requests = uint64_t(10 + i % 7);
        p.completion_tokens = p.requests * 60;
        p.ttft_p50_ms = 20 + i;
        p.ttft_p95_ms = 45 + 2 * i;
        out.push_back(p);
    }
    return out;
}

api::ModelInfo ScriptedEngine::model() const {
    api::ModelInfo m;
    m.id = "Qwen3-0.6B";
    m.path = "/models/Qwen3-0.6B";
    m.architecture = "Qwen3ForCausalLM";
    m.device = "cpu";
    m.parameters = 596000000;
    m.max_context = 4096;
    m.vocab_size = 151936;
    m.weight_bytes = std::size_t(1192) << 20;
    m.kv_bytes = std::size_t(512) << 20;
    m.lora_slot_bytes = std::size_t(64) << 20;
    m.kv_pages_total = 1000;
    m.page_size = 16;
    m.max_loras = 4;
    m.max_lora_rank = 64;
    return m;
}

api::EngineStats ScriptedEngine::stats() const {
    std::lock_guard lock(m_mutex);
    return m_stats;
}

Result<std::vector<int32_t>> ScriptedEngine::tokenize(const std::string& text, bool) const {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
}

Result<std::string> ScriptedEngine::detokenize(const std::vector<int32_t>& ids, bool) const {
    std::string s;
    for (int32_t id : ids) s.push_back(char(id));
    return s;
}

Result<std::string> ScriptedEngine::render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json&,
                                                bool, const nlohmann::ordered_json&) const {
    return messages.dump();
}

void ScriptedEngine::shutdown() {
    std::lock_guard lock(m_mutex);
    m_shutdown = true;
}

}  // namespace loradesk::testing
