// The scripted engine double; see scripted_engine.h.
#include "scripted_engine.h"

#include <condition_variable>
#include <filesystem>
#include <sstream>
#include <thread>

namespace loradesk::testing {

using namespace std::chrono;

namespace {

struct Step {
    api::Event event;
    milliseconds delay{0};  // after the previous event
};

class ScriptedStream : public api::RequestStream {
  public:
    ScriptedStream(api::SubmitInfo info, std::vector<Step> steps, std::shared_ptr<std::atomic<int>> cancelled,
                   std::shared_ptr<std::atomic<int>> live, std::shared_ptr<std::atomic<int>> finished)
        : m_info(std::move(info)),
          m_steps(std::move(steps)),
          m_cancelled_count(std::move(cancelled)),
          m_live(std::move(live)),
          m_finished(std::move(finished)),
          m_last(steady_clock::now()) {
        ++*m_live;
    }
    ~ScriptedStream() override {
        if (!m_ended) --*m_live;
    }
    const api::SubmitInfo& info() const override { return m_info; }

    std::optional<api::Event> next(milliseconds timeout) override {
        std::unique_lock lock(m_mutex);
        if (m_cancel) {
            if (m_cancel_reported) return std::nullopt;
            m_cancel_reported = true;
            api::FinishEvent f;
            f.reason = api::FinishReason::cancelled;
            return api::Event(f);
        }
        if (m_ended) return std::nullopt;
        const auto ready = m_last + m_steps[m_pos].delay;
        m_cv.wait_until(lock, std::min(ready, steady_clock::now() + timeout), [&] { return m_cancel; });
        if (m_cancel || steady_clock::now() < ready) return std::nullopt;
        m_last = steady_clock::now();
        api::Event ev = m_steps[m_pos++].event;
        if (m_pos == m_steps.size()) end();
        return ev;
    }

    // Like the real engine, a cancel frees the request at once; a FinishEvent(cancelled) follows.
    void cancel() override {
        std::lock_guard lock(m_mutex);
        if (m_ended || m_cancel) return;
        m_cancel = true;
        ++*m_cancelled_count;
        end();
        m_cv.notify_all();
    }

  private:
    void end() {
        m_ended = true;
        --*m_live;
        ++*m_finished;
    }

    api::SubmitInfo m_info;
    std::vector<Step> m_steps;
    std::shared_ptr<std::atomic<int>> m_cancelled_count, m_live, m_finished;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    steady_clock::time_point m_last;
    std::size_t m_pos = 0;
    bool m_cancel = false;
    bool m_cancel_reported = false;
    bool m_ended = false;
};

std::string prompt_text(const api::GenerateRequest& r) {
    if (r.prompt) return *r.prompt;
    if (r.messages && r.messages->is_array() && !r.messages->empty()) {
        const auto& c = r.messages->back()["content"];
        return c.is_string() ? c.get<std::string>() : std::string();
    }
    return "ids:" + std::to_string(r.prompt_ids.size());
}

std::vector<std::string> reply_pieces(const std::string& text) {
    if (text.find("#tool") != std::string::npos)
        return {"Let me check.", "\n<tool_", "call>\n{\"name\": \"get_weather\", ",
                "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"};
    if (text.find("#think") != std::string::npos) return {"<th", "ink>\nPonder", "ing.</think>", "\n\nAnswer."};
    if (text.find("#utf8") != std::string::npos) return {"caf", "\xc3\xa9", " \xe2\x9c\x93"};
    if (text.find("#long") != std::string::npos) {
        std::vector<std::string> p;
        for (int i = 0; i < 40; ++i) p.push_back(" w" + std::to_string(i));
        return p;
    }
    return {"Hello", ",", " world", "!"};
}

// `shift` lowers every logprob (best_of tests: a seeded choice k is seed + k, so candidates differ).
std::vector<api::TokenLogprob> logprobs_for(const std::string& piece, int i, int top, float shift = 0) {
    if (top < 0) return {};
    api::TokenLogprob lp;
    lp.chosen = {100 + i, piece, -0.25f * float(i + 1) - shift};
    for (int k = 0; k < top; ++k)
        lp.top.push_back(k == 0 ? lp.chosen : api::TopLogprob{500 + k, "alt" + std::to_string(k), -1.0f - float(k)});
    return {lp};
}

// Scripted prompt scores: one token per word (" word" after the first; "t<id>" for token ids), the first
// unscored, token i with logprob -0.5 i, rank i and `top` alternatives "alt1".. (-0.125 k).
api::TokenEvent prompt_scores(const api::GenerateRequest& r, const std::string& text, int top) {
    std::vector<std::string> tokens;
    if (!r.prompt_ids.empty()) {
        for (int32_t id : r.prompt_ids) tokens.push_back("t" + std::to_string(id));
    } else {
        std::istringstream words(text);
        for (std::string w; words >> w;) tokens.push_back(tokens.empty() ? w : " " + w);
    }
    api::TokenEvent t;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        api::TokenLogprob lp;
        lp.chosen = {int32_t(10 + i), tokens[i], i ? -0.5f * float(i) : 0.0f};
        lp.rank = int(i);
        for (int k = 0; i && k < top; ++k)
            lp.top.push_back({600 + k, "alt" + std::to_string(k + 1), -0.125f * float(k + 1)});
        t.prompt_logprobs.push_back(std::move(lp));
    }
    return t;
}

}  // namespace

ScriptedEngine::ScriptedEngine() {
    api::AdapterInfo sql;
    sql.name = "sql-lora";
    sql.aliases = {"sql"};
    sql.digest = std::string(64, 'a');
    sql.path = "/adapters/sql-lora";
    sql.base_model = "tiny-base";
    sql.rank = 16;
    sql.alpha = 32;
    sql.targets = {"q_proj", "v_proj"};
    sql.size_bytes = 1 << 20;
    sql.tier = api::Tier::gpu;
    sql.last_load_ms = 12.5;
    sql.created_unix = 1700000000;
    api::AdapterInfo chat = sql;
    chat.name = "chat-lora";
    chat.aliases = {};
    chat.digest = std::string(64, 'b');
    chat.path = "/adapters/chat-lora";
    chat.rank = 8;
    chat.tier = api::Tier::disk;
    api::AdapterInfo dora = chat;
    dora.name = "dora-lora";
    dora.digest = std::string(64, 'c');
    dora.compatible = false;
    dora.incompatibility = "uses DoRA, which loradesk cannot apply exactly";
    for (auto* a : {&sql, &chat, &dora}) m_adapters[a->name] = *a;
}

const api::AdapterInfo* ScriptedEngine::find(const std::string& key) const {
    if (auto it = m_adapters.find(key); it != m_adapters.end()) return &it->second;
    for (const auto& [_, a] : m_adapters)
        for (const auto& alias : a.aliases)
            if (alias == key) return &a;
    return nullptr;
}

Result<std::shared_ptr<api::RequestStream>> ScriptedEngine::submit(api::GenerateRequest request) {
    const std::string text = prompt_text(request);
    api::SubmitInfo info;
    {
        std::lock_guard lock(m_mutex);
        m_requests.push_back(request);
        info.request_id = request.id.empty() ? "req-" + std::to_string(m_requests.size()) : request.id;
        std::string key = request.model;
        if (key.rfind("tiny-base:", 0) == 0) key = key.substr(10);
        if (!key.empty() && key != "tiny-base") {
            const api::AdapterInfo* a = find(key);
            if (!a) return Status::failure(ErrorCode::not_found, "The model `" + request.model + "` does not exist.");
            if (!a->compatible) return Status::failure(ErrorCode::unsupported, a->incompatibility);
            info.adapter = a->name;
            info.adapter_digest = a->digest;
            info.tier = a->tier;
        } else {
            info.tier = api::Tier::base;
        }
    }
    if (text.find("#busy") != std::string::npos)
        return Status::failure(ErrorCode::capacity, "the request queue is full; retry later");
    if (text.find("#unavailable") != std::string::npos)
        return Status::failure(ErrorCode::unavailable, "the model is still loading");
    if (text.find("#overflow") != std::string::npos)
        return Status::failure(ErrorCode::context_too_long,
                               "you requested 5000 tokens (4000 in the messages, 1000 in the completion).");
    std::istringstream words(text);
    int prompt_tokens = request.prompt_ids.empty() ? 0 : int(request.prompt_ids.size());
    for (std::string w; request.prompt_ids.empty() && words >> w;) ++prompt_tokens;
    if (prompt_tokens >= model().max_context)
        return Status::failure(ErrorCode::context_too_long,
                               "This model's maximum context length is " + std::to_string(model().max_context) +
                                   " tokens. However, your messages resulted in " + std::to_string(prompt_tokens) +
                                   " tokens. Please reduce the length of the messages.");
    info.prompt_tokens = prompt_tokens;
    info.max_tokens = request.stop.max_tokens;
    info.prefix_hit_tokens = m_cached_tokens;

    milliseconds delay(m_default_delay_ms.load());
    if (text.find("#slow") != std::string::npos) delay = milliseconds(30);
    std::vector<Step> steps;
    std::vector<std::string> pieces = reply_pieces(text);
    if (text.find("#scripted") != std::string::npos) {
        std::lock_guard lock(m_mutex);
        pieces = m_scripted_reply;
    }
    if (request.messages) {
        auto rendered =
            render_chat(*request.messages, request.tools, request.add_generation_prompt, request.chat_template_kwargs);
        if (rendered.ok())
            info.prompt_tail = rendered->substr(rendered->size() - std::min<std::size_t>(rendered->size(), 64));
    }
    api::FinishEvent finish;
    finish.reason = api::FinishReason::stop;
    std::string so_far;
    int n = 0;
    if (request.prompt_logprobs >= 0)
        steps.push_back({api::Event(prompt_scores(request, text, request.prompt_logprobs)), delay});
    const float shift = request.sampling.seed ? 0.1f * float(*request.sampling.seed % 7) : 0.0f;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (n == request.stop.max_tokens) {
            finish.reason = api::FinishReason::length;
            break;
        }
        std::string piece = pieces[i];
        bool stopped = false;
        for (const std::string& s : request.stop.stop) {
            const std::size_t at = (so_far + piece).find(s);
            if (at == std::string::npos) continue;
            piece = (so_far + piece).substr(so_far.size(), at - so_far.size());
            finish.stop_reason = s;
            stopped = true;
            break;
        }
        api::TokenEvent t;
        t.token_ids = {100 + int(i)};
        t.text = piece;
        t.logprobs = logprobs_for(pieces[i], int(i), request.logprobs, shift);
        milliseconds d = delay;
        if (i == 0 && text.find("#stall") != std::string::npos) d = milliseconds(400);
        steps.push_back({api::Event(t), d});
        so_far += piece;
        ++n;
        if (stopped) break;
        if (text.find("#fail") != std::string::npos && n == 2) {
            steps.push_back(
                {api::Event(api::ErrorEvent{Status::failure(ErrorCode::internal, "CUDA error: out of memory")}),
                 delay});
            return std::shared_ptr<api::RequestStream>(
                std::make_shared<ScriptedStream>(info, std::move(steps), m_cancelled, m_live, m_finished));
        }
    }
    if (text.find("#engine-cancel") != std::string::npos) finish.reason = api::FinishReason::cancelled;
    finish.usage = {prompt_tokens, m_cached_tokens.load(), n};
    finish.ttft_ms = double(delay.count()) + 1.0;
    finish.latency_ms = double(delay.count()) * n + 2.0;
    steps.push_back({api::Event(finish), milliseconds(0)});
    return std::shared_ptr<api::RequestStream>(
        std::make_shared<ScriptedStream>(info, std::move(steps), m_cancelled, m_live, m_finished));
}

Status ScriptedEngine::load_adapter(const std::string& name, const std::string& path) {
    std::lock_guard lock(m_mutex);
    if (m_adapters.count(name)) return Status::failure(ErrorCode::conflict, "adapter '" + name + "' is already loaded");
    if (!std::filesystem::is_directory(path))
        return Status::failure(ErrorCode::not_found, "no adapter folder at '" + path + "'");
    api::AdapterInfo a;
    a.name = name;
    a.path = path;
    a.digest = std::string(64, 'd');
    a.rank = 4;
    a.tier = api::Tier::disk;
    m_adapters[name] = a;
    return Status::success();
}

Status ScriptedEngine::unload_adapter(const std::string& name) {
    std::lock_guard lock(m_mutex);
    // As the engine: requests already running finish with the adapter; new ones for the name get 404.
    if (!m_adapters.erase(name)) return Status::failure(ErrorCode::not_found, "no adapter named '" + name + "'");
    return Status::success();
}

Status ScriptedEngine::pin_adapter(const std::string& name, bool pinned) {
    std::lock_guard lock(m_mutex);
    auto it = m_adapters.find(name);
    if (it == m_adapters.end()) return Status::failure(ErrorCode::not_found, "no adapter named '" + name + "'");
    it->second.pinned = pinned;
    return Status::success();
}

Status ScriptedEngine::set_alias(const std::string& alias, const std::string& name) {
    std::lock_guard lock(m_mutex);
    auto it = m_adapters.find(name);
    if (it == m_adapters.end()) return Status::failure(ErrorCode::not_found, "no adapter named '" + name + "'");
    it->second.aliases.push_back(alias);
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
    if (const api::AdapterInfo* a = find(key)) return *a;
    return Status::failure(ErrorCode::not_found, "no adapter named '" + key + "'");
}

api::ModelInfo ScriptedEngine::model() const {
    api::ModelInfo m;
    m.id = "tiny-base";
    m.path = "/models/tiny-base";
    m.architecture = "Qwen3ForCausalLM";
    m.device = "NVIDIA H100 80GB HBM3";
    m.parameters = 6100000;
    m.weight_bytes = 12200000;  // 2 bytes per weight
    m.kv_bytes = 4000000;
    m.vocab_size = 151936;
    m.max_context = 4096;
    std::lock_guard lock(m_mutex);
    m.chat_template = m_chat_template;
    m.quantization = m_quantization;
    m.quantization_detail = m_quantization_detail;
    return m;
}

api::EngineStats ScriptedEngine::stats() const {
    api::EngineStats s;
    s.running = m_live->load();
    s.kv_pages_total = 100;
    s.kv_pages_free = 75;
    s.gpu_slots_used = 1;
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

Status ScriptedEngine::import_adapters(const std::string& folder) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        return Status::failure(ErrorCode::not_found, "no folder '" + folder + "'");
    for (auto& entry : std::filesystem::directory_iterator(folder, ec)) {
        if (!entry.is_directory()) continue;
        Status s = load_adapter(entry.path().filename().string(), entry.path().string());
        if (!s.ok()) return s;
    }
    return Status::success();
}

Result<api::AdapterDetails> ScriptedEngine::adapter_details(const std::string& name_or_alias) const {
    auto info = adapter(name_or_alias);
    if (!info.ok()) return info.status();
    api::AdapterDetails d;
    d.info = info.value();
    return d;
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
    // Qwen3's switch: thinking turned off writes an empty think block.
    const bool thinking_off = kwargs.is_object() && kwargs.value("enable_thinking", true) == false;
    if (add_generation_prompt && thinking_off) out += "<think>\n\n</think>\n\n";
    // A thinking release's template (set_chat_template with <think>) opens the block in the prompt.
    bool opens_think = false;
    {
        std::lock_guard lock(m_mutex);
        opens_think = m_chat_template.find("<think>") != std::string::npos;
    }
    if (add_generation_prompt && !thinking_off && opens_think) out += "<think>\n";
    return out;
}

std::vector<api::GenerateRequest> ScriptedEngine::requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
}

}  // namespace loradesk::testing
