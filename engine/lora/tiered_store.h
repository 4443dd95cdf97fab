// TieredStore: the adapter residency hierarchy disk -> host -> device slot, implementing
// AdapterResidency for the scheduler. Host tier: parsed LoraWeights, bounded by count and bytes, LRU,
// pinned exempt, adapters not on the device evicted first. The loader thread that read an adapter also
// has the runner prepare it (ModelRunner::prepare_lora: the CUDA runner's bf16 slot layout in pinned
// memory); a prepared adapter is held in that form only, so making it resident costs the engine loop no
// conversion. Device tier: the runner's LoRA slots
// 1..max_loras (slot 0 = no adapter), LRU, pinned exempt. Disk reads run on a small thread pool.
// Thread-safety: acquire_slots, n_slots and the introspection calls belong to the engine loop;
// prefetch, set_pinned and forget may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/histogram.h"
#include "core/thread_pool.h"
#include "lora/adapter_registry.h"
#include "lora/adapter_residency.h"
#include "model/model_config.h"
#include "runtime/lora_weights.h"
#include "runtime/model_runner.h"

namespace loradesk::lora {

struct TieredStoreOptions {
    int max_loras = 4;       // device slots
    int max_lora_rank = 64;  // rank of every slot
    int max_loras_cpu = 16;  // host copies
    std::size_t host_budget_bytes = std::size_t(8) << 30;
    // Threads reading adapters from disk. 0: synchronous mode — prefetch and acquire_slots load inline,
    // so tests step deterministically.
    int io_threads = 2;
};

// Reads and converts one adapter (by digest) from disk; throws Error with a user-facing message.
// `reuse`, when not null, holds the weights of an evicted adapter that the loader may take over
// (convert_adapter's `reuse`): writing into its buffers avoids faulting in fresh host pages.
using AdapterLoadFn = std::function<runtime::LoraWeights(const std::string& digest, runtime::LoraWeights* reuse)>;

// The production loader: reads the digest from any folder registered with it (registry.sources)
// whose files still match the signature they were hashed with: plan_adapter + convert_adapter
// against `base`. Fails with conflict when every such folder changed since. `registry` must outlive it.
AdapterLoadFn make_disk_loader(const AdapterRegistry& registry, const model::ModelConfig& base, int max_rank);

class TieredStore final : public AdapterResidency {
  public:
    enum class HostState { absent, loading, ready, failed };

    // Configures the runner's slots (configure_lora_slots(max_loras, max_lora_rank)).
    TieredStore(runtime::ModelRunner& runner, AdapterLoadFn load, TieredStoreOptions options);
    ~TieredStore() override;  // waits for disk reads in progress
    TieredStore(const TieredStore&) = delete;
    TieredStore& operator=(const TieredStore&) = delete;

    int n_slots() const override { return m_options.max_loras; }
    void prefetch(const std::string& digest) override;
    std::vector<SlotGrant> acquire_slots(const std::vector<std::string>& digests) override;

    // Pinned adapters are never evicted from either tier (pinning also prefetches).
    void set_pinned(const std::string& digest, bool pinned);
    // The adapter is gone for good (registry freed it): drops its host copy, discards a read in
    // progress, and clears its device slot at the next acquire_slots.
    void forget(const std::string& digest);

    // Introspection (engine loop; tests, metrics, the UI).
    HostState host_state(const std::string& digest) const;
    std::vector<std::string> host_lru() const;       // ready host copies, least recently used first
    std::vector<std::string> slot_contents() const;  // [0] is always "" (no adapter); "" = free slot
    std::size_t host_bytes() const;
    // The runner's prepared form of a ready host copy (nullptr: absent, or held as f32 LoraWeights).
    std::shared_ptr<const runtime::PreparedLora> host_prepared(const std::string& digest) const;

    // Thread-safe summaries for the facade (HTTP/UI threads), read under the store's lock.
    enum class Tier { disk, host, device };
    Tier tier(const std::string& digest) const;
    int slots_in_use() const;  // adapters resident in a device slot
    int host_count() const;    // ready host copies

    // Adapter movements since start: disk -> host reads (with the runner's preparation) and host -> device
    // slot uploads (the time to issue them on the loop thread), evictions and failures.
    struct Metrics {
        Histogram disk_to_host_seconds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
        Histogram host_to_device_seconds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1};
        uint64_t load_failures = 0;
        uint64_t host_evictions = 0;
        uint64_t device_evictions = 0;
    };
    Metrics metrics() const;

  private:
    struct HostEntry {
        HostState state = HostState::loading;
        uint64_t generation = 0;
        uint64_t last_use = 0;
        bool on_device = false;
        std::shared_ptr<const runtime::LoraWeights> weights;    // null when prepared holds the adapter
        std::shared_ptr<const runtime::PreparedLora> prepared;  // the runner's upload-ready form, if any
        std::size_t bytes = 0;
        std::string error;
        ErrorCode error_code = ErrorCode::internal;
    };
    struct Slot {
        std::string digest;
        uint64_t last_use = 0;
    };

    void start_load_locked(std::unique_lock<std::mutex>& lock, const std::string& digest);
    struct Loaded {
        std::shared_ptr<const runtime::LoraWeights> weights;
        std::shared_ptr<const runtime::PreparedLora> prepared;
        std::string error;
        ErrorCode error_code = ErrorCode::internal;
        double seconds = 0;  // read + preparation
    };
    Loaded read_and_prepare(const std::string& digest);  // on a loader thread
    void finish_load(const std::string& digest, uint64_t generation, Loaded loaded);
    void enforce_host_limits_locked(const std::string& keep);
    void fail_host_budget_locked(const std::string& digest);
    void drain_forgotten();
    bool all_slots_pinned() const;  // then an adapter that is not pinned can never be placed
    void mark_on_device(const std::string& digest, bool on_device);
    SlotGrant place(const std::string& digest, const std::vector<std::string>& step);
    int pick_slot(const std::vector<std::string>& step) const;

    runtime::ModelRunner& m_runner;
    AdapterLoadFn m_load;
    TieredStoreOptions m_options;

    mutable std::mutex m_mutex;  // guards everything below except m_slots
    std::map<std::string, HostEntry> m_host;
    std::set<std::string> m_pinned;
    std::vector<std::string> m_forgotten;
    uint64_t m_tick = 0;
    uint64_t m_generation = 0;
    Metrics m_metrics;

    std::vector<Slot> m_slots;  // engine loop only; [0] unused

    // Weights of at most one evicted adapter, kept for the next disk read to overwrite (outside the host
    // budget). Shared with the host copies' deleters, which may run on any thread after the store died.
    struct RecycleBin {
        std::mutex mutex;
        std::vector<runtime::LoraWeights> items;
    };
    std::shared_ptr<RecycleBin> m_bin = std::make_shared<RecycleBin>();

    std::unique_ptr<ThreadPool> m_pool;  // last: destroyed (and drained) first
};

}  // namespace loradesk::lora
