// TieredStore: host-tier bookkeeping under one mutex (disk reads finish on pool threads), device
// slots owned by the engine loop. Every eviction choice is LRU over a logical clock so that runs are
// reproducible and the simulation tests can state exact expected orders.
#include "lora/tiered_store.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "lora/adapter_loader.h"

namespace loradesk::lora {

namespace {

constexpr std::size_t kMaxRecycled = 1;

// Shares `w` so that when the last holder (host tier or runner) lets go, its buffers go to the bin.
template <class Bin>
std::shared_ptr<const runtime::LoraWeights> share_recyclable(runtime::LoraWeights w, std::weak_ptr<Bin> bin) {
    return std::shared_ptr<const runtime::LoraWeights>(
        new runtime::LoraWeights(std::move(w)), [bin](const runtime::LoraWeights* p) {
            // Created non-const just above, so taking it back as mutable is sound.
            std::unique_ptr<runtime::LoraWeights> owned(const_cast<runtime::LoraWeights*>(p));
            if (auto b = bin.lock()) {
                std::lock_guard lock(b->mutex);
                if (b->items.size() < kMaxRecycled) b->items.push_back(std::move(*owned));
            }
        });
}

std::string short_digest(const std::string& d) { return d.substr(0, 12); }
}  // namespace

TieredStore::TieredStore(runtime::ModelRunner& runner, AdapterLoadFn load, TieredStoreOptions options)
    : m_runner(runner), m_load(std::move(load)), m_options(options) {
    if (options.max_loras < 1) throw_expected(ErrorCode::invalid_argument, "--max-loras must be at least 1");
    if (options.max_lora_rank < 1) throw_expected(ErrorCode::invalid_argument, "--max-lora-rank must be at least 1");
    if (options.max_loras_cpu < options.max_loras)
        throw_expected(ErrorCode::invalid_argument, "--max-loras-cpu (" + std::to_string(options.max_loras_cpu) +
                                                        ") must be at least --max-loras (" +
                                                        std::to_string(options.max_loras) + ")");
    m_runner.configure_lora_slots(options.max_loras, options.max_lora_rank);
    m_slots.resize(std::size_t(options.max_loras) + 1);
    if (options.io_threads > 0)
        m_pool = std::make_unique<ThreadPool>(options.io_threads + 1);  // +1: the pool counts its caller
}

TieredStore::~TieredStore() { m_pool.reset(); }

void TieredStore::start_load_locked(std::unique_lock<std::mutex>& lock, const std::string& digest) {
    HostEntry& e = m_host[digest];
    e = HostEntry{};
    e.generation = ++m_generation;
    e.last_use = ++m_tick;
    uint64_t generation = e.generation;
    auto task = [this, digest, generation] {
        const auto t0 = std::chrono::steady_clock::now();
        Loaded loaded = read_and_prepare(digest);
        loaded.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        finish_load(digest, generation, std::move(loaded));
    };
    if (m_pool) {
        m_pool->submit(std::move(task));
    } else {
        lock.unlock();
        task();
        lock.lock();
    }
}

// Disk -> host, then the runner's conversion, both here on the loader thread. A prepared adapter drops
// its f32 weights at once (their buffers go to the recycle bin for the next read); a failed preparation
// (pinned memory exhausted, say) keeps them, and the slot upload converts on the loop as before.
TieredStore::Loaded TieredStore::read_and_prepare(const std::string& digest) {
    Loaded out;
    try {
        std::optional<runtime::LoraWeights> reuse;
        {
            std::lock_guard bin_lock(m_bin->mutex);
            if (!m_bin->items.empty()) {
                reuse.emplace(std::move(m_bin->items.back()));
                m_bin->items.pop_back();
            }
        }
        out.weights = share_recyclable(m_load(digest, reuse ? &*reuse : nullptr), std::weak_ptr(m_bin));
    } catch (const Error& ex) {
        out.error = ex.what();
        out.error_code = ex.code();
        return out;
    } catch (const std::exception& ex) {
        out.error = ex.what();
        return out;
    }
    if (out.weights->max_rank() > m_options.max_lora_rank) {
        out.error = "adapter rank " + std::to_string(out.weights->max_rank()) + " exceeds --max-lora-rank " +
                    std::to_string(m_options.max_lora_rank) + "; restart with a larger --max-lora-rank";
        out.error_code = ErrorCode::unsupported;
        out.weights.reset();
        return out;
    }
    try {
        out.prepared = m_runner.prepare_lora(*out.weights);
    } catch (const std::exception& ex) {
        log::warn("adapter {}: preparing it for the device failed ({}); it will be converted at upload",
                  short_digest(digest), ex.what());
    }
    if (out.prepared) out.weights.reset();
    return out;
}

void TieredStore::finish_load(const std::string& digest, uint64_t generation, Loaded loaded) {
    std::lock_guard lock(m_mutex);
    auto it = m_host.find(digest);
    if (it == m_host.end() || it->second.generation != generation) return;  // forgotten meanwhile
    HostEntry& e = it->second;
    if (!loaded.error.empty()) {
        ++m_metrics.load_failures;
        e.state = HostState::failed;
        e.error = std::move(loaded.error);
        e.error_code = loaded.error_code;
        log::warn("adapter {} failed to load: {}", short_digest(digest), e.error);
        return;
    }
    m_metrics.disk_to_host_seconds.observe(loaded.seconds);
    e.state = HostState::ready;
    e.bytes = loaded.prepared ? loaded.prepared->bytes() : loaded.weights->bytes();
    e.weights = std::move(loaded.weights);
    e.prepared = std::move(loaded.prepared);
    enforce_host_limits_locked(digest);
}

// Evicts ready host copies until count and bytes fit: unpinned only, those not on the device first,
// then least recently used. If the newcomer still does not fit, it fails (pinned adapters hold the room).
void TieredStore::enforce_host_limits_locked(const std::string& keep) {
    // What eviction cannot touch (the newcomer and pinned copies) must fit on its own; otherwise fail
    // the newcomer without evicting anything for nothing.
    int n_fixed = 0;
    std::size_t fixed_bytes = 0;
    for (auto& [d, e] : m_host)
        if (e.state == HostState::ready && (d == keep || m_pinned.count(d))) {
            n_fixed++;
            fixed_bytes += e.bytes;
        }
    if (n_fixed > m_options.max_loras_cpu || fixed_bytes > m_options.host_budget_bytes) {
        fail_host_budget_locked(keep);
        return;
    }
    for (;;) {
        int n_ready = 0;
        std::size_t bytes = 0;
        for (auto& [d, e] : m_host)
            if (e.state == HostState::ready) {
                n_ready++;
                bytes += e.bytes;
            }
        if (n_ready <= m_options.max_loras_cpu && bytes <= m_options.host_budget_bytes) return;
        const std::string* victim = nullptr;
        const HostEntry* best = nullptr;
        for (auto& [d, e] : m_host) {
            if (e.state != HostState::ready || d == keep || m_pinned.count(d)) continue;
            if (!best || std::make_pair(e.on_device, e.last_use) < std::make_pair(best->on_device, best->last_use)) {
                best = &e;
                victim = &d;
            }
        }
        if (!victim) {
            fail_host_budget_locked(keep);
            return;
        }
        log::debug("adapter {} evicted from host memory", short_digest(*victim));
        m_host.erase(*victim);
        ++m_metrics.host_evictions;
    }
}

void TieredStore::fail_host_budget_locked(const std::string& digest) {
    HostEntry& e = m_host[digest];
    e.state = HostState::failed;
    e.error = "adapter needs " + std::to_string((e.bytes + (1 << 20) - 1) >> 20) +
              " MiB of host memory but the LoRA host budget (" + std::to_string(m_options.host_budget_bytes >> 20) +
              " MiB, " + std::to_string(m_options.max_loras_cpu) +
              " adapters) cannot hold it next to the pinned adapters; unpin one or raise the budget / --max-loras-cpu";
    e.error_code = ErrorCode::capacity;
    e.weights.reset();
    e.prepared.reset();
    e.bytes = 0;
}

void TieredStore::prefetch(const std::string& digest) {
    std::unique_lock lock(m_mutex);
    auto it = m_host.find(digest);
    if (it != m_host.end()) {
        it->second.last_use = ++m_tick;
        return;
    }
    start_load_locked(lock, digest);
}

void TieredStore::set_pinned(const std::string& digest, bool pinned) {
    {
        std::lock_guard lock(m_mutex);
        if (pinned)
            m_pinned.insert(digest);
        else
            m_pinned.erase(digest);
    }
    if (pinned) prefetch(digest);
}

void TieredStore::forget(const std::string& digest) {
    std::lock_guard lock(m_mutex);
    m_host.erase(digest);
    m_pinned.erase(digest);
    m_forgotten.push_back(digest);
}

void TieredStore::drain_forgotten() {
    std::vector<std::string> gone;
    {
        std::lock_guard lock(m_mutex);
        gone.swap(m_forgotten);
    }
    for (auto& d : gone)
        for (std::size_t s = 1; s < m_slots.size(); ++s)
            if (m_slots[s].digest == d) {
                m_runner.clear_lora_slot(int(s));
                m_slots[s] = Slot{};
            }
}

int TieredStore::pick_slot(const std::vector<std::string>& step) const {
    int best = -1;
    for (std::size_t s = 1; s < m_slots.size(); ++s) {
        const Slot& slot = m_slots[s];
        if (slot.digest.empty()) return int(s);
        if (std::find(step.begin(), step.end(), slot.digest) != step.end()) continue;
        bool pinned;
        {
            std::lock_guard lock(m_mutex);
            pinned = m_pinned.count(slot.digest) > 0;
        }
        if (pinned) continue;
        if (best < 0 || slot.last_use < m_slots[std::size_t(best)].last_use) best = int(s);
    }
    return best;
}

bool TieredStore::all_slots_pinned() const {
    std::lock_guard lock(m_mutex);
    for (std::size_t s = 1; s < m_slots.size(); ++s)
        if (m_slots[s].digest.empty() || m_pinned.count(m_slots[s].digest) == 0) return false;
    return true;
}

void TieredStore::mark_on_device(const std::string& digest, bool on_device) {
    if (digest.empty()) return;
    std::lock_guard lock(m_mutex);
    if (auto it = m_host.find(digest); it != m_host.end()) it->second.on_device = on_device;
}

// Puts one host-ready adapter into a device slot (or reports why not yet / never).
SlotGrant TieredStore::place(const std::string& digest, const std::vector<std::string>& step) {
    std::shared_ptr<const runtime::LoraWeights> weights;
    std::shared_ptr<const runtime::PreparedLora> prepared;
    {
        std::unique_lock lock(m_mutex);
        auto it = m_host.find(digest);
        if (it == m_host.end()) {
            start_load_locked(lock, digest);
            it = m_host.find(digest);  // synchronous mode may have finished (or failed) already
            if (it == m_host.end()) return {Residency::loading, 0, {}};
        }
        HostEntry& e = it->second;
        e.last_use = ++m_tick;
        if (e.state == HostState::loading) return {Residency::loading, 0, {}};
        if (e.state == HostState::failed) {
            SlotGrant g{Residency::failed, 0, e.error, e.error_code};
            m_host.erase(it);  // reported once; a later prefetch tries again
            return g;
        }
        weights = e.weights;
        prepared = e.prepared;
    }
    int s = pick_slot(step);
    if (s < 0 && !all_slots_pinned())  // the others serve this step's adapters: a later step has room
        return {Residency::loading, 0, {}};
    if (s < 0)
        return {Residency::failed, 0,
                "all " + std::to_string(m_options.max_loras) +
                    " LoRA slots hold pinned adapters; unpin one or restart with a larger --max-loras",
                ErrorCode::capacity};
    Slot& slot = m_slots[std::size_t(s)];
    std::string evicted = slot.digest;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        if (!evicted.empty()) m_runner.clear_lora_slot(s);
        slot = Slot{};
        if (prepared)
            m_runner.load_prepared_lora_slot(s, std::move(prepared));
        else
            m_runner.load_lora_slot(s, *weights);
    } catch (const std::exception& ex) {
        m_runner.clear_lora_slot(s);
        mark_on_device(evicted, false);
        return {Residency::failed, 0, std::string("could not copy the adapter to the device: ") + ex.what()};
    }
    mark_on_device(evicted, false);
    mark_on_device(digest, true);
    std::lock_guard lock(m_mutex);
    m_metrics.host_to_device_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!evicted.empty()) ++m_metrics.device_evictions;
    slot = Slot{digest, m_tick};
    return {Residency::ready, s, {}};
}

std::vector<SlotGrant> TieredStore::acquire_slots(const std::vector<std::string>& digests) {
    if (int(digests.size()) > m_options.max_loras)
        throw_error(ErrorCode::internal, "acquire_slots asked for " + std::to_string(digests.size()) +
                                             " adapters but there are only " + std::to_string(m_options.max_loras) +
                                             " slots");
    for (std::size_t i = 0; i < digests.size(); ++i)
        if (std::find(digests.begin() + long(i) + 1, digests.end(), digests[i]) != digests.end())
            throw_error(ErrorCode::internal, "acquire_slots got adapter " + short_digest(digests[i]) + " twice");
    drain_forgotten();
    uint64_t now;
    {
        std::lock_guard lock(m_mutex);
        now = ++m_tick;
    }
    std::vector<SlotGrant> grants(digests.size());
    std::vector<bool> done(digests.size(), false);
    // Adapters already on the device first, so that placing the others never evicts one of them.
    for (std::size_t i = 0; i < digests.size(); ++i)
        for (std::size_t s = 1; s < m_slots.size(); ++s)
            if (m_slots[s].digest == digests[i]) {
                m_slots[s].last_use = now;
                grants[i] = {Residency::ready, int(s), {}};
                done[i] = true;
                std::lock_guard lock(m_mutex);
                if (auto it = m_host.find(digests[i]); it != m_host.end()) it->second.last_use = now;
            }
    for (std::size_t i = 0; i < digests.size(); ++i)
        if (!done[i]) grants[i] = place(digests[i], digests);
    return grants;
}

TieredStore::HostState TieredStore::host_state(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_host.find(digest);
    return it == m_host.end() ? HostState::absent : it->second.state;
}

std::vector<std::string> TieredStore::host_lru() const {
    std::lock_guard lock(m_mutex);
    std::vector<std::pair<uint64_t, std::string>> v;
    for (auto& [d, e] : m_host)
        if (e.state == HostState::ready) v.emplace_back(e.last_use, d);
    std::sort(v.begin(), v.end());
    std::vector<std::string> out;
    for (auto& [t, d] : v) out.push_back(d);
    return out;
}

AdapterLoadFn make_disk_loader(const AdapterRegistry& registry, const model::ModelConfig& base, int max_rank) {
    return [&registry, base, max_rank](const std::string& digest, runtime::LoraWeights* reuse) {
        std::vector<AdapterSummary> sources = registry.sources(digest);
        if (sources.empty())
            throw_expected(ErrorCode::not_found, "adapter " + short_digest(digest) + " is no longer registered");
        // The digest was taken from the files as their signature describes them; a folder whose files
        // changed since holds other content under the old identity. Any folder registered with this
        // content that is unchanged will do; the signature is checked again after the read, so a
        // rewrite during it is caught too. (Summaries without a signature fall back to the size.)
        auto unchanged = [](const AdapterSummary& s, const AdapterPlan& plan) {
            if (!s.signature.empty()) return folder_signature(s.path) == s.signature;
            return std::size_t(std::filesystem::file_size(plan.file->path())) == s.size_bytes;
        };
        for (const AdapterSummary& s : sources) {
            if (!s.signature.empty() && folder_signature(s.path) != s.signature) continue;
            AdapterPlan plan = plan_adapter(s.path, &base, max_rank);
            if (!unchanged(s, plan)) continue;
            runtime::LoraWeights w = convert_adapter(plan, base.n_layers, nullptr, reuse);
            if (unchanged(s, plan)) return w;
            reuse = nullptr;  // its buffers now hold the discarded read
        }
        // Being rewritten: the folder watch registers the new content under the name once it is whole (or,
        // without a watch, loading the folder again does).
        throw_expected(ErrorCode::unavailable, "adapter '" + sources.front().name +
                                                   "' changed on disk since it was registered; retry shortly, "
                                                   "or load the folder again if the server does not watch it");
    };
}

std::vector<std::string> TieredStore::slot_contents() const {
    std::vector<std::string> out;
    for (auto& s : m_slots) out.push_back(s.digest);
    return out;
}

std::size_t TieredStore::host_bytes() const {
    std::lock_guard lock(m_mutex);
    std::size_t n = 0;
    for (auto& [d, e] : m_host)
        if (e.state == HostState::ready) n += e.bytes;
    return n;
}

std::shared_ptr<const runtime::PreparedLora> TieredStore::host_prepared(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_host.find(digest);
    return it == m_host.end() || it->second.state != HostState::ready ? nullptr : it->second.prepared;
}

TieredStore::Tier TieredStore::tier(const std::string& digest) const {
    std::lock_guard lock(m_mutex);
    auto it = m_host.find(digest);
    if (it == m_host.end() || it->second.state != HostState::ready) return Tier::disk;
    return it->second.on_device ? Tier::device : Tier::host;
}

int TieredStore::slots_in_use() const {
    std::lock_guard lock(m_mutex);
    int n = 0;
    for (auto& [digest, e] : m_host) n += e.on_device ? 1 : 0;
    return n;
}

TieredStore::Metrics TieredStore::metrics() const {
    std::lock_guard lock(m_mutex);
    return m_metrics;
}

int TieredStore::host_count() const {
    std::lock_guard lock(m_mutex);
    int n = 0;
    for (auto& [digest, e] : m_host) n += e.state == HostState::ready ? 1 : 0;
    return n;
}

}  // namespace loradesk::lora
