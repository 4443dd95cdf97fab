// The scripted engine's adapter table, model, statistics, tokenizer and chat rendering; see scripted_engine.h.
// Generation lives in scripted_reply.cpp.
#include "scripted_engine.h"

#include <algorithm>
#include <filesystem>

namespace loradesk::testing {

namespace {

namespace fs = std::filesystem;

Status no_adapter(const std::string& name) {
    return Status::failure(ErrorCode::not_found, "no adapter named '" + name + "' is loaded");
}

}  // namespace

ScriptedEngine::ScriptedEngine(ScriptedFixture fixture)
    : m_fixture(std::move(fixture)), m_tokens_per_second(m_fixture.stats.tokens_per_second) {
    for (const api::AdapterInfo& a : m_fixture.adapters) m_adapters[a.name] = a;
}

void ScriptedEngine::record(std::string call) { m_calls.push_back(std::move(call)); }

const api::AdapterInfo* ScriptedEngine::find(const std::string& key) const {
    if (auto it = m_adapters.find(key); it != m_adapters.end()) return &it->second;
    for (const auto& [_, a] : m_adapters)
        if (std::find(a.aliases.begin(), a.aliases.end(), key) != a.aliases.end()) return &a;
    return nullptr;
}

api::AdapterInfo* ScriptedEngine::find(const std::string& key) {
    return const_cast<api::AdapterInfo*>(std::as_const(*this).find(key));
}

// As EngineImpl: a served name or alias is never re-pointed; a rejected folder fails again with its reason.
Status ScriptedEngine::load_adapter(const std::string& name, const std::string& path) {
    std::lock_guard lock(m_mutex);
    record("load " + name + " " + path);
    if (const api::AdapterInfo* a = find(name)) {
        if (!a->compatible)
            return Status::failure(ErrorCode::unsupported, "adapter '" + name + "' " + a->incompatibility);
        return Status::failure(ErrorCode::conflict, "adapter '" + name + "' is already loaded");
    }
    std::error_code ec;
    if (!fs::is_directory(path, ec))
        return Status::failure(ErrorCode::not_found, "adapter folder '" + path + "' does not exist");
    api::AdapterInfo a = make_adapter(name, m_fixture.model.id, 4, "disk", false, 0);
    a.path = path;
    a.digest = std::string(64, 'd');
    m_adapters[name] = a;
    return Status::success();
}

// As EngineImpl: the name stops being served (running requests finish with it) and leaves the list.
Status ScriptedEngine::unload_adapter(const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("unload " + name);
    auto it = m_adapters.find(name);
    if (it == m_adapters.end() || !it->second.compatible) return no_adapter(name);
    m_adapters.erase(it);
    return Status::success();
}

Status ScriptedEngine::pin_adapter(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    record("pin " + name + " " + (pinned ? "1" : "0"));
    api::AdapterInfo* a = find(name);
    if (!a || !a->compatible) return no_adapter(name);
    a->pinned = pinned;
    return Status::success();
}

Status ScriptedEngine::set_alias(const std::string& alias, const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("alias " + alias + " " + name);
    if (find(alias) || alias == m_fixture.model.id)
        return Status::failure(ErrorCode::conflict, "the name '" + alias + "' is already taken");
    api::AdapterInfo* a = find(name);
    if (!a || !a->compatible) return no_adapter(name);
    a->aliases.push_back(alias);
    return Status::success();
}

std::vector<api::AdapterInfo> ScriptedEngine::adapters() const {
    std::lock_guard lock(m_mutex);
    std::vector<api::AdapterInfo> out;
    for (const auto& [_, a] : m_adapters) out.push_back(a);
    return out;
}

Result<api::AdapterInfo> ScriptedEngine::adapter(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    if (const api::AdapterInfo* a = find(key)) return *a;  // a refused folder too, with its reason
    return no_adapter(key);
}

// As EngineImpl: each subfolder holding an adapter_config.json is loaded under its folder name.
Status ScriptedEngine::import_adapters(const std::string& folder) {
    {
        std::lock_guard lock(m_mutex);
        record("import " + folder);
    }
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        return Status::failure(ErrorCode::not_found, "folder '" + folder + "' does not exist");
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_directory() && fs::exists(entry.path() / "adapter_config.json")) found.push_back(entry.path());
    if (found.empty())
        return Status::failure(ErrorCode::not_found,
                               "no adapter folders (with adapter_config.json) in '" + folder + "'");
    std::sort(found.begin(), found.end());
    for (const fs::path& p : found) {
        Status s = load_adapter(p.filename().string(), p.string());
        if (!s.ok() && s.code != ErrorCode::conflict) return s;  // already served: the import keeps it
    }
    return Status::success();
}

Status ScriptedEngine::remove_adapter(const std::string& name) {
    std::lock_guard lock(m_mutex);
    record("remove " + name);
    if (!m_adapters.erase(name)) return no_adapter(name);
    return Status::success();
}

Result<api::AdapterDetails> ScriptedEngine::adapter_details(const std::string& key) const {
    std::lock_guard lock(m_mutex);
    const api::AdapterInfo* a = find(key);
    if (!a) return no_adapter(key);
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

// Thirty minutes at most of made-up per-minute rows, newest first as a catalog query may return them.
Result<std::vector<api::StatsPoint>> ScriptedEngine::adapter_history(const std::string& key, int minutes) const {
    std::lock_guard lock(m_mutex);
    if (!find(key)) return no_adapter(key);
    std::vector<api::StatsPoint> out;
    const int n = std::min(minutes, 30);
    for (int i = n - 1; i >= 0; --i) {
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
    api::ModelInfo m = m_fixture.model;
    std::lock_guard lock(m_mutex);
    m.chat_template = m_chat_template;
    if (!m_quantization.empty()) {
        m.quantization = m_quantization;
        m.quantization_detail = m_quantization_detail;
    }
    return m;
}

api::EngineStats ScriptedEngine::stats() const {
    api::EngineStats s = m_fixture.stats;
    s.running += m_live->load();
    std::lock_guard lock(m_mutex);
    s.tokens_per_second = m_tokens_per_second;
    return s;
}

Result<std::vector<int32_t>> ScriptedEngine::tokenize(const std::string& text, bool add_special_tokens) const {
    std::vector<int32_t> ids;
    if (add_special_tokens) ids.push_back(kBos);
    for (unsigned char c : text) ids.push_back(int32_t(c) + 2);
    return ids;
}

Result<std::string> ScriptedEngine::detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::string out;
    for (int32_t id : ids) {
        if (id == kBos) {
            if (!skip_special_tokens) out += "<s>";
        } else if (id >= 2 && id < 258) {
            out += char(id - 2);
        } else {
            return Status::failure(ErrorCode::invalid_argument, "token id " + std::to_string(id) + " is out of range");
        }
    }
    return out;
}

Result<std::string> ScriptedEngine::render_chat(const nlohmann::ordered_json& messages,
                                                const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                                const nlohmann::ordered_json& kwargs) const {
    std::string out;
    // Like a real tool-aware template, the tools are written into the prompt (Ollama's /api/show probes this).
    if (tools.is_array() && !tools.empty()) out += "<|tools|>" + tools.dump() + "\n";
    for (const auto& m : messages) {
        if (!m.is_object() || !m.contains("role")) return Status::failure(ErrorCode::invalid_argument, "bad message");
        out += "<|" + m["role"].get<std::string>() + "|>" +
               (m["content"].is_string() ? m["content"].get<std::string>() : "") + "\n";
    }
    if (add_generation_prompt) out += "<|assistant|>";
    const bool thinking_off = kwargs.is_object() && kwargs.value("enable_thinking", true) == false;
    if (add_generation_prompt && thinking_off) out += "<think>\n\n</think>\n\n";
    bool opens_think = false;
    {
        std::lock_guard lock(m_mutex);
        opens_think = m_chat_template.find("<think>") != std::string::npos;
    }
    if (add_generation_prompt && !thinking_off && opens_think) out += "<think>\n";
    return out;
}

void ScriptedEngine::shutdown() {
    std::lock_guard lock(m_mutex);
    m_shutdown = true;
}

std::vector<std::string> ScriptedEngine::calls() const {
    std::lock_guard lock(m_mutex);
    return m_calls;
}

std::vector<api::GenerateRequest> ScriptedEngine::requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
}

void ScriptedEngine::set_tokens_per_second(double tps) {
    std::lock_guard lock(m_mutex);
    m_tokens_per_second = tps;
}

void ScriptedEngine::set_chat_template(std::string text) {
    std::lock_guard lock(m_mutex);
    m_chat_template = std::move(text);
}

void ScriptedEngine::set_quantization(std::string method, std::string detail) {
    std::lock_guard lock(m_mutex);
    m_quantization = std::move(method);
    m_quantization_detail = std::move(detail);
}

void ScriptedEngine::set_scripted_reply(std::vector<std::string> pieces) {
    std::lock_guard lock(m_mutex);
    m_scripted_reply = std::move(pieces);
}

}  // namespace loradesk::testing
