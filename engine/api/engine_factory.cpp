// create_engine(): builds an EngineCore from EngineOptions — model, runner, tokenizer, chat template,
// adapter tiers, engine loop, catalog — and registers the configured adapters.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "api/engine_impl.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "lora/adapter_loader.h"
#include "model/model_weights.h"
#include "runtime/cpu/runner_factory.h"

namespace loradesk::api {
namespace fs = std::filesystem;

EngineCore::~EngineCore() {
    if (watch) watch->stop();
    if (loop) loop->stop();
}

namespace {

uint64_t count_parameters(const model::ModelConfig& c) {
    uint64_t n = 0;
    for (auto& spec : model::model_tensor_specs(c)) {
        uint64_t k = 1;
        for (auto d : spec.shape) k *= uint64_t(d);
        n += k;
    }
    return n;
}

// EOS ids: config.json ∪ generation_config.json ∪ the tokenizer's eos_token (as vLLM/transformers).
std::vector<int32_t> collect_eos(const model::ModelConfig& c, const std::string& dir, const tokenizer::Tokenizer& tok) {
    auto ids = model::load_eos_token_ids(dir, c);
    std::set<int32_t> all(ids.begin(), ids.end());
    if (auto id = tok.eos_token_id()) all.insert(*id);
    return {all.begin(), all.end()};
}

std::vector<std::pair<std::string, std::string>> configured_adapters(const EngineOptions& o) {
    std::vector<std::pair<std::string, std::string>> out = o.named_adapters;
    for (auto& root : o.adapter_dirs) {
        std::error_code ec;
        if (!fs::is_directory(root, ec))
            throw_expected(ErrorCode::not_found, "--adapters folder '" + root + "' does not exist");
        for (auto& dir : catalog::find_adapter_dirs(root)) out.emplace_back(fs::path(dir).filename().string(), dir);
    }
    return out;
}

void register_initial_adapters(EngineCore& core) {
    std::set<std::string> names;
    for (auto& [name, dir] : configured_adapters(core.options)) {
        try {
            register_adapter_folder(core, name, fs::canonical(dir).string());
            names.insert(name);
        } catch (const Error& e) {
            // One bad adapter must not keep the server from starting; it is listed with its reason.
            log::warn("adapter '{}' not served: {}", name, e.what());
        }
    }
    if (!core.catalog) return;
    for (auto& rec : core.catalog->servable_adapters()) {
        if (names.count(rec.name) || rec.compat == catalog::Compat::incompatible) continue;
        try {
            auto reg = register_adapter_folder(core, rec.name, rec.path);
            if (rec.pinned) {
                core.registry.set_pinned(reg.name, true);
                core.store->set_pinned(reg.summary.digest, true);
            }
        } catch (const Error& e) {
            log::warn("catalog adapter '{}' not served: {}", rec.name, e.what());
        }
    }
}

std::shared_ptr<EngineCore> build_core(const EngineOptions& options) {
    if (options.model_dir.empty())
        throw_expected(ErrorCode::invalid_argument, "no model given: pass --model DIR (a Hugging Face model folder)");
    std::error_code ec;
    if (!fs::is_directory(options.model_dir, ec))
        throw_expected(ErrorCode::not_found, "model folder '" + options.model_dir + "' does not exist");
    auto core = std::make_shared<EngineCore>();
    core->options = options;
    core->options.model_dir = fs::canonical(options.model_dir).string();
    const std::string& dir = core->options.model_dir;
    core->model_id = fs::path(dir).filename().string();
    core->config = model::load_model_config(dir);
    core->parameters = count_parameters(core->config);
    core->max_context = options.max_context > 0 ? std::min(options.max_context, core->config.max_position_embeddings)
                                                : core->config.max_position_embeddings;
    core->tokenizer = tokenizer::Tokenizer::load(dir);
    try {
        core->chat_template = jinja::ChatTemplate::from_model_dir(dir);
    } catch (const ExpectedError& e) {
        if (e.code() != ErrorCode::not_found) throw;
        log::info("{} has no chat template: chat completions are refused, completions work", core->model_id);
    }
    core->eos_ids = collect_eos(core->config, dir, *core->tokenizer);
    log::info("loading {} ({}, {:.1f} M parameters) on {}", core->model_id, core->config.architecture_name,
              double(core->parameters) / 1e6, options.device);
    core->runner = runtime::create_runner(options.device, dir, options.cpu_threads);

    lora::TieredStoreOptions so;
    so.max_loras = options.max_loras;
    so.max_lora_rank = options.max_lora_rank;
    so.max_loras_cpu = options.max_loras_cpu;
    so.host_budget_bytes = options.max_cpu_lora_bytes;
    core->store = std::make_unique<lora::TieredStore>(
        *core->runner, lora::make_disk_loader(core->registry, core->config, options.max_lora_rank), so);

    sched::EngineLoopConfig lc;
    lc.sched.capacity.max_loras = options.max_loras;
    lc.sched.capacity.max_running = options.max_running;
    lc.sched.capacity.max_batch_tokens = options.max_batch_tokens;
    lc.sched.capacity.policy = sched::parse_policy(options.policy);
    lc.sched.max_waiting = options.max_waiting;
    lc.sched.max_context = core->max_context;
    lc.kv_bytes = std::size_t(options.kv_memory_gb * double(std::size_t(1) << 30));
    lc.page_size = options.page_size;
    lc.max_lora_rank = options.max_lora_rank;
    core->loop = std::make_unique<sched::EngineLoop>(*core->runner, *core->store, lc);

    // An adapter nobody names and nobody uses any more: drop its copies and its KV namespace at once.
    std::weak_ptr<EngineCore> weak = core;
    core->registry.set_on_freed([weak](const std::string& digest) {
        if (auto c = weak.lock()) {
            c->store->forget(digest);
            c->loop->evict_adapter(digest);
        }
    });

    if (!options.data_dir.empty())
        core->catalog = std::make_unique<CatalogBridge>(options.data_dir, core->model_id, dir,
                                                        core->config.architecture_name, options.catalog_start_fresh);
    // The watch records the folders' signatures before startup registers them, so a folder that changes
    // while it is being registered is picked up by the first poll rather than missed.
    if (!options.adapter_dirs.empty()) core->watch = std::make_unique<AdapterFolderWatch>(*core, options.adapter_dirs);
    register_initial_adapters(*core);
    if (core->watch) core->watch->start(std::chrono::milliseconds(std::max(0, options.adapter_watch_interval_ms)));
    return core;
}

}  // namespace

Result<std::unique_ptr<Engine>> create_engine(const EngineOptions& options) {
    std::shared_ptr<EngineCore> core;
    Status s = capture_status([&] { core = build_core(options); });
    if (!s.ok()) return s;
    return std::unique_ptr<Engine>(std::make_unique<EngineImpl>(std::move(core)));
}

}  // namespace loradesk::api
