#include "api/engine_impl.h"

#include <filesystem>
#include <random>
#include <set>

#include "api/adapter_registration.h"
#include "api/request_stream_impl.h"
#include "core/error.h"
#include "core/log.h"
#include "lora/adapter_loader.h"
#include "lora/adapter_summary.h"

namespace loradesk::api {
namespace fs = std::filesystem;

namespace {

// How long a request for an adapter whose folder is still being read waits for it. Reading one folder
// takes well under a second once the request moves it to the front of the queue.
constexpr std::chrono::seconds kPendingAdapterWait{30};

std::string new_request_id() {
    static std::atomic<uint64_t> next{1};
    return "req-" + std::to_string(next.fetch_add(1));
}

Tier tier_of(const lora::TieredStore& store, const std::string& digest) {
    switch (store.tier(digest)) {
        case lora::TieredStore::Tier::device:
            return Tier::gpu;
        case lora::TieredStore::Tier::host:
            return Tier::cpu;
        case lora::TieredStore::Tier::disk:
            return Tier::disk;
    }
    return Tier::disk;
}

// The facade's sampling fields as the engine loop's sampler takes them. Without a seed each request
// draws its own, so two unseeded requests differ; with one, a request reproduces regardless of its
// batch mates.
sched::SamplingConfig to_loop_sampling(const GenerateRequest& r) {
    static std::atomic<uint64_t> unseeded{0x9e3779b97f4a7c15ull ^ uint64_t(std::random_device{}())};
    sched::SamplingConfig c;
    auto& p = c.params;
    const auto& s = r.sampling;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.min_p = s.min_p;
    p.repetition_penalty = s.repetition_penalty;
    p.presence_penalty = s.presence_penalty;
    p.frequency_penalty = s.frequency_penalty;
    for (auto& [id, bias] : s.logit_bias) p.logit_bias.emplace_back(id, bias);
    p.seed = s.seed ? *s.seed : unseeded.fetch_add(0x632be59bd9b4e019ull);
    p.top_logprobs = r.logprobs;
    return c;
}

}  // namespace

std::vector<int32_t> EngineImpl::build_prompt(const GenerateRequest& r, std::string& prompt_tail) const {
    int forms = int(!r.prompt_ids.empty()) + int(r.prompt.has_value()) + int(r.messages.has_value());
    if (forms != 1) throw_expected(ErrorCode::invalid_argument, "give exactly one of prompt_ids, prompt or messages");
    std::vector<int32_t> ids;
    if (!r.prompt_ids.empty()) {
        ids = r.prompt_ids;
    } else if (r.prompt) {
        ids = m_core->tokenizer->encode(*r.prompt, true);  // as vLLM: BOS per the tokenizer, specials parsed
    } else {
        if (!m_core->chat_template)
            throw_expected(ErrorCode::invalid_argument,
                           "the model '" + m_core->model_id +
                               "' has no chat template, so it cannot answer chat requests: use /v1/completions with "
                               "a prompt, or restart the server with --chat-template FILE (a Jinja chat template)");
        std::string text =
            m_core->chat_template->render(*r.messages, r.tools, r.add_generation_prompt, r.chat_template_kwargs);
        prompt_tail = text.substr(text.size() - std::min<std::size_t>(text.size(), 64));
        ids = m_core->tokenizer->encode(text, false);  // the template already wrote BOS if the model wants it
    }
    if (ids.empty()) throw_expected(ErrorCode::invalid_argument, "the prompt is empty");
    return ids;
}

std::shared_ptr<RequestStream> EngineImpl::submit_or_throw(GenerateRequest& r) {
    if (m_core->shutting_down) throw_expected(ErrorCode::unavailable, "the engine is shutting down");
    if (r.id.empty()) r.id = new_request_id();

    // model: "", the base id, "base", an adapter name or alias, or "<base id>:<adapter>".
    std::string adapter = r.model;
    if (adapter == m_core->model_id || adapter == "base") adapter.clear();
    if (auto colon = adapter.find(':'); colon != std::string::npos && !m_core->registry.find(adapter)) {
        std::string prefix = adapter.substr(0, colon);
        if (prefix != m_core->model_id && prefix != "base")
            throw_expected(ErrorCode::not_found, "the model `" + r.model + "` does not exist: '" + prefix +
                                                     "' is not the served base model '" + m_core->model_id + "'");
        adapter = adapter.substr(colon + 1);
    }
    lora::AdapterLease lease;
    if (!adapter.empty()) {
        // An adapter still being read after startup is read next, and this request waits for it.
        auto found = m_core->registry.find(adapter);
        if (found && found->pending) m_core->hasher->prioritize(found->name);
        if (!found) throw_if_listed_unservable(adapter);
        lease = m_core->registry.acquire(adapter, kPendingAdapterWait);  // throws not_found with the reason
    }
    const std::string digest = lease ? lease.digest() : std::string();

    if (r.prompt_logprobs < -1 || r.prompt_logprobs > 20)
        throw_expected(ErrorCode::invalid_argument, "prompt_logprobs must be between 0 and 20 (or -1 for off), not " +
                                                        std::to_string(r.prompt_logprobs));
    std::string prompt_tail;
    std::vector<int32_t> prompt = build_prompt(r, prompt_tail);
    const int n_prompt = int(prompt.size());
    if (r.stop.strict_max_tokens && int64_t(n_prompt) + r.stop.max_tokens > m_core->max_context)
        throw_expected(ErrorCode::context_too_long,
                       sched::context_too_long_message(m_core->max_context, n_prompt, r.stop.max_tokens,
                                                       r.messages ? "messages" : "prompt"));

    sched::SubmitSpec lr;
    lr.ns = digest;
    lr.prompt = prompt;
    lr.sampling = to_loop_sampling(r);
    lr.stop.max_tokens = r.stop.max_tokens;
    lr.stop.min_tokens = r.stop.min_tokens;
    lr.stop.eos_token_ids = m_core->eos_ids;
    lr.stop.stop_token_ids = r.stop.stop_token_ids;
    lr.stop.ignore_eos = r.stop.ignore_eos;
    lr.prompt_logprobs = r.prompt_logprobs;
    if (!r.grammar.empty()) lr.constraint = m_core->structured->matcher_for(r.grammar);

    SubmitInfo info;
    info.request_id = r.id;
    info.adapter = adapter;
    info.adapter_digest = digest;
    info.tier = digest.empty() ? Tier::base : tier_of(*m_core->store, digest);
    info.prompt_tokens = int(prompt.size());
    info.max_tokens = std::min(r.stop.max_tokens, m_core->max_context - int(prompt.size()));
    info.prompt_tail = std::move(prompt_tail);

    auto channel = m_core->loop->submit(std::move(lr));  // context length, queue capacity, ids
    {
        std::lock_guard lock(m_core->mutex);
        auto& c = m_core->counters[digest];
        c.requests++;
        c.running++;
    }
    return std::make_shared<StreamImpl>(m_core, std::move(channel), std::move(info), r, prompt, std::move(lease));
}

void EngineImpl::throw_if_listed_unservable(const std::string& name) const {
    std::lock_guard lock(m_core->mutex);
    for (auto& [path, r] : m_core->rejected)
        if (r.name == name) throw_expected(ErrorCode::not_found, not_served_message(name, r.reason));
}

Result<std::shared_ptr<RequestStream>> EngineImpl::submit(GenerateRequest request) {
    return capture_result<std::shared_ptr<RequestStream>>([&] { return submit_or_throw(request); });
}

Status EngineImpl::load_adapter(const std::string& name, const std::string& path) {
    return capture_status([&] {
        check_served_name(*m_core, name);
        std::error_code ec;
        if (!fs::is_directory(path, ec))
            throw_expected(ErrorCode::not_found, "adapter folder '" + path + "' does not exist");
        // A taken name is a conflict (vLLM answers 400 "already loaded"): clients never re-point a served
        // name. A failure is the caller's to report; it is not listed among the folder rejections.
        register_adapter_folder(*m_core, name, fs::canonical(path).string(), lora::OnTaken::refuse, false);
    });
}

Status EngineImpl::unload_adapter(const std::string& name) {
    return capture_status([&] {
        auto found = m_core->registry.find(name);
        m_core->registry.unload(name);  // throws not_found; running requests keep their lease
        if (m_core->catalog && found)
            m_core->catalog->event(catalog::EventKind::unload, found->summary.digest, name, "");
    });
}

Status EngineImpl::pin_adapter(const std::string& name, bool pinned) {
    return capture_status([&] {
        auto found = m_core->registry.find(name);
        if (!found) throw_expected(ErrorCode::not_found, "no adapter named '" + name + "' is loaded");
        m_core->registry.set_pinned(found->name, pinned);
        // A pending adapter gets its store pin when its digest is known (record_registered).
        if (!found->pending) m_core->store->set_pinned(found->summary.digest, pinned);
        if (m_core->catalog) m_core->catalog->set_pinned(found->name, pinned);
    });
}

Status EngineImpl::set_alias(const std::string& alias, const std::string& name) {
    return capture_status([&] {
        check_served_name(*m_core, alias, "alias");
        m_core->registry.add_alias(alias, name);
        if (m_core->catalog) m_core->catalog->set_alias(alias, name);
    });
}

AdapterInfo EngineImpl::describe(const lora::RegisteredAdapter& a) const {
    const auto& s = a.summary;
    AdapterInfo info;
    info.name = a.name;
    info.aliases = a.aliases;
    info.digest = s.digest;
    info.path = s.path;
    info.base_model = s.base_model;
    info.rank = s.rank;
    info.alpha = s.alpha;
    info.rslora = s.rslora;
    info.targets = s.targets;
    info.size_bytes = s.size_bytes;
    info.tier = tier_of(*m_core->store, s.digest);
    info.pinned = a.pinned;
    info.created_unix = a.created_unix;
    std::lock_guard lock(m_core->mutex);
    if (auto it = m_core->counters.find(s.digest); it != m_core->counters.end()) {
        info.running = it->second.running;
        info.requests_total = it->second.requests;
        info.prompt_tokens_total = it->second.prompt_tokens;
        info.cached_tokens_total = it->second.cached_tokens;
        info.generated_tokens_total = it->second.generated_tokens;
        info.last_used_unix = it->second.last_used_unix;
    }
    if (auto it = m_core->last_load_ms.find(s.digest); it != m_core->last_load_ms.end()) info.last_load_ms = it->second;
    return info;
}

void EngineImpl::apply_queue_counts(std::vector<AdapterInfo>& infos) const {
    const sched::LoopStats l = m_core->loop->stats();
    std::map<std::string_view, std::pair<int, int>> by_digest;  // running, waiting
    for (auto& [d, n] : l.running_by_adapter) by_digest[d].first = n;
    for (auto& [d, n] : l.waiting_by_adapter) by_digest[d].second = n;
    for (auto& info : infos) {
        auto it = by_digest.find(info.digest);
        info.running = it == by_digest.end() ? 0 : it->second.first;
        info.waiting = it == by_digest.end() ? 0 : it->second.second;
    }
}

std::vector<AdapterInfo> EngineImpl::adapters() const {
    std::vector<AdapterInfo> out;
    std::set<std::string> served;
    for (auto& a : m_core->registry.list()) {
        served.insert(a.name);
        out.push_back(describe(a));
    }
    apply_queue_counts(out);
    std::lock_guard lock(m_core->mutex);
    for (auto& [path, r] : m_core->rejected) {
        if (served.count(r.name)) continue;  // one entry per name: the served folder wins
        out.push_back(rejected_info(r));
    }
    return out;
}

AdapterInfo EngineImpl::rejected_info(const RejectedAdapter& r) {
    AdapterInfo info;
    info.name = r.name;
    info.path = r.path;
    info.tier = Tier::disk;
    info.compatible = false;
    info.incompatibility = r.reason;
    return info;
}

// A served name or alias, else a folder that failed validation under that name (listed by adapters() with
// its reason, so GET /v1/adapters/NAME can say why it is not served).
Result<AdapterInfo> EngineImpl::adapter(const std::string& name_or_alias) const {
    auto found = m_core->registry.find(name_or_alias);
    if (!found) {
        std::lock_guard lock(m_core->mutex);
        for (auto& [path, r] : m_core->rejected)
            if (r.name == name_or_alias) return rejected_info(r);
        return Status::failure(ErrorCode::not_found, "no adapter named '" + name_or_alias + "' is loaded");
    }
    std::vector<AdapterInfo> one{describe(*found)};
    apply_queue_counts(one);
    return one[0];
}

Status EngineImpl::import_adapters(const std::string& folder) {
    return capture_status([&] {
        std::error_code ec;
        if (!fs::is_directory(folder, ec))
            throw_expected(ErrorCode::not_found, "folder '" + folder + "' does not exist");
        std::vector<std::string> failures;
        int n_ok = 0;
        for (auto& dir : catalog::find_adapter_dirs(folder)) {
            try {
                const std::string name = fs::path(dir).filename().string(), real = fs::canonical(dir).string();
                // Importing a folder that is served already refreshes it; another folder cannot take its name.
                auto served = m_core->registry.find(name);
                const bool same = served && served->name == name && served->summary.path == real;
                register_adapter_folder(*m_core, name, real, same ? lora::OnTaken::replace : lora::OnTaken::refuse,
                                        true);
                ++n_ok;
            } catch (const Error& e) {
                failures.push_back(fs::path(dir).filename().string() + ": " + e.what());
            }
        }
        if (n_ok == 0 && failures.empty())
            throw_expected(ErrorCode::not_found, "no adapter folders (with adapter_config.json) in '" + folder + "'");
        if (!failures.empty()) {
            std::string msg =
                std::to_string(n_ok) + " adapters imported; " + std::to_string(failures.size()) + " failed:";
            for (auto& f : failures) msg += "\n  " + f;
            throw_expected(ErrorCode::invalid_argument, msg);
        }
    });
}

Status EngineImpl::remove_adapter(const std::string& name) {
    return capture_status([&] {
        bool known = false;
        if (m_core->registry.find(name)) {
            m_core->registry.unload(name);
            known = true;
        }
        {
            std::lock_guard lock(m_core->mutex);
            known |= std::erase_if(m_core->rejected, [&](const auto& entry) { return entry.second.name == name; }) > 0;
        }
        if (m_core->catalog) {
            m_core->catalog->remove(name);
            known = true;
        }
        if (!known) throw_expected(ErrorCode::not_found, "no adapter named '" + name + "'");
    });
}

Result<AdapterDetails> EngineImpl::adapter_details(const std::string& name_or_alias) const {
    return capture_result<AdapterDetails>([&] {
        AdapterDetails d;
        auto found = m_core->registry.find(name_or_alias);
        if (m_core->catalog) {
            d = m_core->catalog->details(found ? found->name : name_or_alias);
        } else if (!found) {
            throw_expected(ErrorCode::not_found, "no adapter named '" + name_or_alias + "'");
        }
        if (found) {
            AdapterInfo live = describe(*found);
            live.created_unix = d.info.created_unix;
            live.compatible = true;
            d.info = live;
        }
        return d;
    });
}

Result<std::vector<StatsPoint>> EngineImpl::adapter_history(const std::string& name_or_alias, int minutes) const {
    return capture_result<std::vector<StatsPoint>>([&] {
        if (!m_core->catalog) return std::vector<StatsPoint>{};  // no data dir: no history kept
        auto found = m_core->registry.find(name_or_alias);
        return m_core->catalog->history(found ? found->name : name_or_alias, std::clamp(minutes, 1, 60 * 24 * 31));
    });
}

ModelInfo EngineImpl::model() const {
    ModelInfo m;
    const auto& c = *m_core;
    m.id = c.model_id;
    m.path = c.options.model_dir;
    m.architecture = c.config.architecture_name;
    m.device = c.runner->device_name();
    m.parameters = c.parameters;
    m.max_context = c.max_context;
    m.vocab_size = c.config.vocab_size;
    if (c.config.quant.quantized()) {
        m.quantization = model::quant_format_name(c.config.quant.format);
        m.quantization_detail = model::quant_description(c.config.quant);
    }
    auto mem = c.runner->memory();
    m.weight_bytes = mem.weight_bytes;
    m.kv_bytes = mem.kv_bytes;
    m.lora_slot_bytes = mem.lora_slot_bytes;
    m.kv_pages_total = c.loop->n_pages();
    m.page_size = c.options.page_size;
    m.max_loras = c.options.max_loras;
    m.max_lora_rank = c.options.max_lora_rank;
    if (c.chat_template) m.chat_template = c.chat_template->source();
    return m;
}

EngineStats EngineImpl::stats() const {
    EngineStats s;
    auto l = m_core->loop->stats();
    s.running = l.running;
    s.waiting = l.waiting;
    s.kv_pages_total = l.pages_total;
    s.kv_pages_free = l.pages_free;
    s.kv_pages_cached = l.pages_cached;
    s.steps_total = uint64_t(l.counters.steps);
    s.prompt_tokens_total = m_core->prompt_tokens_total.load();
    s.cached_tokens_total = m_core->cached_tokens_total.load();
    s.generated_tokens_total = m_core->generated_tokens_total.load();
    {
        std::lock_guard lock(m_core->mutex);
        s.tokens_per_second = m_core->generated_rate.per_second();
    }
    s.gpu_slots_used = m_core->store->slots_in_use();
    s.cpu_adapters = m_core->store->host_count();
    s.max_loras = m_core->store->n_slots();
    s.swapped = l.swapped;
    s.waiting_for_adapter = l.waiting_for_adapter;
    s.preemptions_total = uint64_t(l.counters.preemptions);
    s.computed_tokens_total = uint64_t(l.counters.computed_tokens);
    s.finished_total = uint64_t(l.counters.finished);
    const sched::LoopMetrics& m = l.metrics;
    s.step_seconds = m.step_seconds;
    s.batch_size = m.batch_size;
    s.prefill_tokens_per_step = m.prefill_tokens;
    s.decode_tokens_per_step = m.decode_tokens;
    s.plan_seconds_total = m.plan_seconds;
    s.forward_seconds_total = m.forward_seconds;
    s.sample_seconds_total = m.sample_seconds;
    s.commit_seconds_total = m.commit_seconds;
    s.sampled_rows_total = uint64_t(m.sampled_rows);
    s.host_sampled_rows_total = uint64_t(m.host_sampled_rows);
    auto names = [&](const std::vector<std::pair<std::string, int>>& by_digest) {
        std::vector<std::pair<std::string, int>> out;
        for (auto& [digest, n] : by_digest)
            if (!digest.empty()) {
                auto a = m_core->registry.find_digest(digest);  // unloaded while running: its digest stands in
                out.emplace_back(a ? a->name : digest.substr(0, 12), n);
            }
        return out;
    };
    s.running_by_adapter = names(l.running_by_adapter);
    s.waiting_by_adapter = names(l.waiting_by_adapter);
    const lora::TieredStore::Metrics sm = m_core->store->metrics();
    s.adapter_disk_to_host_seconds = sm.disk_to_host_seconds;
    s.adapter_host_to_device_seconds = sm.host_to_device_seconds;
    s.adapter_load_failures = sm.load_failures;
    s.adapter_host_evictions = sm.host_evictions;
    s.adapter_device_evictions = sm.device_evictions;
    return s;
}

Result<std::vector<int32_t>> EngineImpl::tokenize(const std::string& text, bool add_special_tokens) const {
    return capture_result<std::vector<int32_t>>([&] { return m_core->tokenizer->encode(text, add_special_tokens); });
}

Result<std::string> EngineImpl::detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    return capture_result<std::string>([&] {
        for (int32_t id : ids)
            if (!m_core->tokenizer->is_known_id(id))
                throw_expected(ErrorCode::invalid_argument,
                               "token id " + std::to_string(id) + " is not in the vocabulary");
        return m_core->tokenizer->decode(ids, skip_special_tokens);
    });
}

Result<std::string> EngineImpl::render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                            bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
    return capture_result<std::string>([&] {
        if (!m_core->chat_template)
            throw_expected(ErrorCode::invalid_argument, "the model '" + m_core->model_id + "' has no chat template");
        return m_core->chat_template->render(messages, tools, add_generation_prompt, kwargs);
    });
}

void EngineImpl::wait_adapters_read() const { m_core->hasher->wait_idle(); }

AdapterFolderWatch::PollReport EngineImpl::poll_adapter_folders_now() {
    if (!m_core->watch || m_core->shutting_down) return {};
    return m_core->watch->poll_once();
}

void EngineImpl::shutdown() {
    if (m_core->shutting_down.exchange(true)) return;
    if (m_core->watch) m_core->watch->stop();  // no registration races the loop's stop
    m_core->hasher->stop();                    // pending adapters fail: their waiting requests return
    m_core->loop->stop();  // cancels running requests (their streams see cancelled) and joins the thread
    if (m_core->catalog) m_core->catalog->stats().flush();
}

}  // namespace loradesk::api
