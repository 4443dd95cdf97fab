// create_engine(): builds an EngineCore from EngineOptions — model, runner, tokenizer, chat template,
// adapter tiers, engine loop, catalog — and registers the configured adapters.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "api/adapter_registration.h"
#include "api/engine_impl.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "lora/adapter_loader.h"
#include "model/model_weights.h"
#include "runtime/factory/runner_factory.h"
#include "runtime/memory_plan.h"

namespace loradesk::api {
namespace fs = std::filesystem;

EngineCore::~EngineCore() {
    if (watch) watch->stop();
    if (hasher) hasher->stop();
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

// KV pages and adapter slots: on a GPU, planned from what is free once the weights are loaded (the runner
// exists by now); on the CPU runner, the fixed defaults. Writes the result into core.options.
void plan_memory(EngineCore& core) {
    EngineOptions& o = core.options;
    const std::optional<runtime::DeviceMemory> dev = core.runner->device_memory();
    if (!dev) {
        if (o.max_loras <= 0) o.max_loras = 4;
        if (o.kv_memory_gb <= 0) o.kv_memory_gb = 0.5;
        return;
    }
    runtime::MemoryPlanInput in;
    in.device_total = dev->total;
    in.device_free = dev->free;
    in.utilization = o.gpu_memory_utilization;
    // Allocated after the plan and outside it: CUDA graph pools, page-table metadata, the slot staging.
    in.reserve_bytes = std::size_t(1) << 30;
    in.kv_page_bytes = core.runner->kv_page_bytes(o.page_size);
    in.page_size = o.page_size;
    in.slot_bytes = core.runner->lora_slot_bytes(o.max_lora_rank);
    in.max_context = core.max_context;
    in.kv_memory_gb = o.kv_memory_gb;
    in.max_loras = o.max_loras;
    const runtime::MemoryPlan plan = runtime::plan_device_memory(in);
    o.max_loras = plan.max_loras;
    o.kv_memory_gb = double(plan.kv_bytes) / double(std::size_t(1) << 30);
    log::info("{}", plan.summary);
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
    core->model_id = options.served_model_id.empty() ? fs::path(dir).filename().string() : options.served_model_id;
    core->config = model::load_model_config(dir);
    core->parameters = count_parameters(core->config);
    core->max_context = options.max_context > 0 ? std::min(options.max_context, core->config.max_position_embeddings)
                                                : core->config.max_position_embeddings;
    core->tokenizer = tokenizer::Tokenizer::load(dir);
    if (!options.chat_template_file.empty()) {
        core->chat_template = jinja::ChatTemplate::from_file(dir, options.chat_template_file);
    } else {
        try {
            core->chat_template = jinja::ChatTemplate::from_model_dir(dir);
        } catch (const ExpectedError& e) {
            if (e.code() != ErrorCode::not_found) throw;
            log::warn(
                "{} has no chat template: completions are served, chat requests are refused (give one with "
                "--chat-template FILE)",
                core->model_id);
        }
    }
    core->eos_ids = collect_eos(core->config, dir, *core->tokenizer);
    core->structured = std::make_unique<StructuredOutput>(core->tokenizer, core->eos_ids);
    const std::string quant =
        core->config.quant.quantized() ? ", " + model::quant_description(core->config.quant) : std::string();
    log::info("loading {} ({}, {:.1f} M parameters{}) on {}", core->model_id, core->config.architecture_name,
              double(core->parameters) / 1e6, quant, options.device);
    core->runner = runtime::create_runner(options.device, dir, options.cpu_threads, !options.fp8_weight_only);
    plan_memory(*core);

    const EngineOptions& planned = core->options;
    lora::TieredStoreOptions so;
    so.max_loras = planned.max_loras;
    so.max_lora_rank = planned.max_lora_rank;
    so.max_loras_cpu = std::max(planned.max_loras_cpu, planned.max_loras);  // every slot's adapter has a host copy
    so.host_budget_bytes = planned.max_cpu_lora_bytes;
    core->store = std::make_unique<lora::TieredStore>(
        *core->runner, lora::make_disk_loader(core->registry, core->config, options.max_lora_rank), so);

    sched::EngineLoopConfig lc;
    lc.sched.capacity.max_loras = planned.max_loras;
    lc.sched.capacity.max_running = options.max_running;
    lc.sched.capacity.max_batch_tokens = options.max_batch_tokens;
    lc.sched.capacity.policy = sched::parse_policy(options.policy);
    lc.sched.max_waiting = options.max_waiting;
    lc.sched.max_context = core->max_context;
    lc.sched.capacity.reserve_tokens = options.kv_reserve_tokens;
    lc.kv_bytes = std::size_t(planned.kv_memory_gb * double(std::size_t(1) << 30));
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
    // Folders whose digest is not cached are read by a few threads while the engine already serves.
    core->hasher = std::make_unique<AdapterHasher>(std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 4));
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
