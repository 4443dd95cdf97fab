// EngineCore: everything one running engine owns, shared by the facade and the request streams it
// hands out (a stream keeps the core alive, so a slow HTTP client can never outlive the objects its
// request uses). Built by create_engine(); members are immutable after construction except where a
// member says how it is synchronised.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/adapter_folder_watch.h"
#include "api/adapter_hasher.h"
#include "api/catalog_bridge.h"
#include "api/engine.h"
#include "api/rate_meter.h"
#include "api/structured_output.h"
#include "lora/adapter_registry.h"
#include "lora/tiered_store.h"
#include "model/model_config.h"
#include "runtime/model_runner.h"
#include "sched/engine_loop.h"
#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace loradesk::api {

// Per-adapter counters for AdapterInfo and /metrics, keyed by digest ("" = base model).
struct AdapterCounters {
    uint64_t requests = 0;
    uint64_t prompt_tokens = 0;
    uint64_t cached_tokens = 0;
    uint64_t generated_tokens = 0;
    int running = 0;
    int64_t last_used_unix = 0;
};

// An adapter folder that was found but could not be registered (another base model, DoRA, a name
// that is not allowed, a symlink out of --adapters, ...).
struct RejectedAdapter {
    std::string name;
    std::string path;
    std::string reason;
};

struct EngineCore {
    EngineOptions options;
    std::string model_id;  // served id of the base model: its folder name
    model::ModelConfig config;
    uint64_t parameters = 0;
    int max_context = 0;
    std::vector<int32_t> eos_ids;

    std::unique_ptr<runtime::ModelRunner> runner;
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    std::optional<jinja::ChatTemplate> chat_template;
    std::unique_ptr<StructuredOutput> structured;  // grammars of constrained requests

    // Destruction order matters (reverse of declaration): the loop stops before the store and the
    // runner go; the registry outlives every lease held by streams (they hold the core).
    lora::AdapterRegistry registry;
    std::unique_ptr<lora::TieredStore> store;
    std::unique_ptr<CatalogBridge> catalog;  // null without a data dir
    std::unique_ptr<sched::EngineLoop> loop;
    // Reads adapter folders whose digest is not cached, after startup (adapter_registration.h). Goes
    // before the loop, catalog, store and registry, which its jobs use.
    std::unique_ptr<AdapterHasher> hasher;
    // Polls options.adapter_dirs (null without them). Declared last so it goes first: its thread uses
    // the registry, the catalog and the store (through the registry's on_freed).
    std::unique_ptr<AdapterFolderWatch> watch;

    std::mutex mutex;  // guards the members below
    std::map<std::string, AdapterCounters> counters;
    std::map<std::string, double> last_load_ms;       // digest -> last cold load time
    std::map<std::string, RejectedAdapter> rejected;  // by folder path: one entry per folder
    RateMeter generated_rate;
    std::atomic<uint64_t> prompt_tokens_total{0};
    std::atomic<uint64_t> cached_tokens_total{0};
    std::atomic<uint64_t> generated_tokens_total{0};
    std::atomic<bool> shutting_down{false};

    ~EngineCore();
};

}  // namespace loradesk::api
