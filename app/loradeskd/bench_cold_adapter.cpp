// `loradeskd bench --cold-adapter DIR`: B base requests decode while, from step --cold-at, one PEFT adapter is
// brought from disk into a device slot through the engine's own lora::TieredStore: prefetch at admission, the
// disk read (plan_adapter + convert_adapter) and ModelRunner::prepare_lora on the store's loader thread, then
// acquire_slots on the loop thread before each step until the adapter is placed (CUDA: copies of the prepared
// pinned form on the LoRA stream). Reports disk -> host, preparation, the loop thread's time in the placing
// acquire_slots call, host -> device completion, and every step's time before / during / after the load (the
// cost to running requests; the goal is none beyond a small fraction of a step).
#include "bench_cold_adapter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include "bench_common.h"
#include "core/error.h"
#include "lora/adapter_loader.h"
#include "lora/tiered_store.h"

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace loradesk::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// Asks the kernel to drop the adapter's files from the page cache so the read really comes from disk.
// Returns false where that is not possible (not Linux, or a file could not be opened).
bool drop_page_cache(const std::string& dir) {
#if defined(__linux__)
    bool ok = true;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        int fd = ::open(e.path().c_str(), O_RDONLY);
        if (fd < 0) {
            ok = false;
            continue;
        }
        ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 && ok;
        ::close(fd);
    }
    return ok;
#else
    (void)dir;
    return false;
#endif
}

// One cold load through a TieredStore of one slot: its loader thread reads and prepares, the caller (the loop
// thread) calls acquire_slots before each step as the scheduler does; pollers timestamp when the host copy is
// ready and, for CUDA, when the upload has landed on the device.
class ColdLoad {
  public:
    ColdLoad(BenchRunner& b, std::string dir, const model::ModelConfig& cfg, int max_rank)
        : m_bench(b),
          m_dir(std::move(dir)),
          m_store(*b.runner, make_loader(cfg, max_rank),
                  lora::TieredStoreOptions{1, max_rank, 2, std::size_t(64) << 30, 1}) {}
    ~ColdLoad() {
        if (m_host_poller.joinable()) m_host_poller.join();
        if (m_poller.joinable()) m_poller.join();
    }

    void start() {
        m_cache_dropped = drop_page_cache(m_dir);
        m_start = Clock::now();
        m_store.prefetch(kDigest);  // as admission does
        m_host_poller = std::thread([this] {
            while (m_store.host_state(kDigest) == lora::TieredStore::HostState::loading)
                std::this_thread::sleep_for(std::chrono::microseconds(20));
            m_host_done = Clock::now();
        });
    }
    bool started() const { return m_host_poller.joinable() || m_slot_called; }

    // Loop thread, before a step: the scheduler's acquire_slots, until it places the adapter.
    void upload_if_ready() {
        if (m_slot_called) return;
        const auto t0 = Clock::now();
        const lora::SlotGrant g = m_store.acquire_slots({kDigest}).at(0);
        const auto t1 = Clock::now();
        if (g.state == lora::Residency::failed) throw_expected(ErrorCode::invalid_argument, "cold adapter: " + g.error);
        if (g.state == lora::Residency::loading) return;
        m_slot = g.slot;
        m_slot_called = true;
        m_call_start = t0, m_call_end = t1;
        m_host_poller.join();
        m_prepared = m_store.host_prepared(kDigest) != nullptr;
        m_host_bytes = m_store.host_bytes();
#ifdef LORADESK_HAS_CUDA_RUNNER
        if (m_bench.cuda) {
            m_poller = std::thread([this] {
                while (!m_bench.cuda->lora_uploads_done()) std::this_thread::sleep_for(std::chrono::microseconds(20));
                m_device_done = Clock::now();
                m_device_ready.store(true, std::memory_order_release);
            });
            return;
        }
#endif
        m_device_done = m_call_end;  // CPU runner: load_lora_slot copies synchronously
        m_device_ready.store(true, std::memory_order_release);
    }
    bool device_ready() const { return m_device_ready.load(std::memory_order_acquire); }
    void finish() {
        if (m_poller.joinable()) m_poller.join();
    }
    int slot() const { return m_slot; }
    Clock::time_point start_time() const { return m_start; }
    Clock::time_point device_done() const { return m_device_done; }  // after device_ready()

    nlohmann::json report() const {
        return {{"page_cache_dropped", m_cache_dropped},
                {"disk_to_host_ms", ms_between(m_start, m_read_done)},
                {"prepare_ms", ms_between(m_read_done, m_host_done)},
                {"prepared", m_prepared},
                {"load_lora_slot_call_ms", ms_between(m_call_start, m_call_end)},
                {"host_to_device_ms", ms_between(m_call_start, m_device_done)},
                {"disk_to_device_ms", ms_between(m_start, m_device_done)},
                {"host_tier_mib", double(m_host_bytes) / 1048576.0}};
    }

  private:
    static constexpr const char* kDigest = "cold-adapter";

    // The store's disk loader for one directory (make_disk_loader minus the registry lookup).
    lora::AdapterLoadFn make_loader(const model::ModelConfig& cfg, int max_rank) {
        return [this, cfg, max_rank](const std::string&, runtime::LoraWeights* reuse) {
            lora::AdapterPlan plan = lora::plan_adapter(m_dir, &cfg, max_rank);
            runtime::LoraWeights w = lora::convert_adapter(plan, cfg.n_layers, nullptr, reuse);
            m_read_done = Clock::now();  // happens-before the host-ready state the poller waits for
            return w;
        };
    }

    BenchRunner& m_bench;
    std::string m_dir;
    lora::TieredStore m_store;
    std::thread m_host_poller, m_poller;
    std::atomic<bool> m_device_ready{false};
    bool m_slot_called = false, m_cache_dropped = false, m_prepared = false;
    int m_slot = 0;
    std::size_t m_host_bytes = 0;
    Clock::time_point m_start, m_read_done, m_host_done, m_call_start, m_call_end, m_device_done;
};

struct PhaseStats {
    std::vector<double> ms;
    double median() const {
        if (ms.empty()) return 0;
        std::vector<double> s = ms;
        std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(s.size() / 2), s.end());
        return s[s.size() / 2];
    }
    double max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
    nlohmann::json json() const { return {{"steps", ms.size()}, {"median_ms", median()}, {"max_ms", max()}}; }
};

void check_tokens(const std::vector<int32_t>& tokens, int vocab) {
    for (int32_t t : tokens) {
        if (t < 0 || t >= vocab) throw_error(ErrorCode::internal, "bench: token out of range");
        if (t != tokens[0]) throw_error(ErrorCode::internal, "bench: identical base sequences disagree");
    }
}

// One batch size: decode at least new_tokens steps, and until kAfterSteps steps ran after the load landed.
nlohmann::json run_one(BenchRunner& b, const std::string& dir, int B, int prompt_len, int new_tokens, int cold_at,
                       int max_rank) {
    constexpr int kAfterSteps = 16, kExtraSteps = 1024, page_size = 16;
    const model::ModelConfig& cfg = b.runner->config();
    const int pages_per_seq = (prompt_len + new_tokens + kExtraSteps) / page_size + 2;
    runtime::SequenceDriver d(*b.runner, pages_per_seq * B + 2, page_size);  // + the probe sequence's page
    std::vector<runtime::SequenceDriver::Work> work;
    std::vector<int32_t> tokens =
        prefill_sequences(b, d, work, std::vector<int>(std::size_t(B), 0), prompt_len, std::max(prompt_len, 4096));
    ColdLoad load(b, dir, cfg, max_rank);  // configures the runner's one slot (before the untimed step 0)
    std::vector<std::pair<Clock::time_point, double>> steps;  // start, ms (step 0 = graph capture, untimed)
    int after = 0;
    for (int s = 0; s < new_tokens + kExtraSteps && (s < new_tokens || after < kAfterSteps); ++s) {
        check_tokens(tokens, cfg.vocab_size);
        for (int i = 0; i < B; ++i) work[std::size_t(i)].tokens = {tokens[std::size_t(i)]};
        if (s == cold_at) load.start();
        const auto t0 = Clock::now();
        if (load.started()) load.upload_if_ready();  // on the loop thread, between steps, as the engine does
        tokens = b.step(d, work);
        if (s > 0) steps.emplace_back(t0, ms_between(t0, Clock::now()));
        if (load.device_ready() && t0 > load.device_done()) ++after;
    }
    if (after < kAfterSteps)
        throw_error(ErrorCode::internal, "bench: the adapter had not reached the device " +
                                             std::to_string(kExtraSteps) +
                                             " steps after --new-tokens (raise --new-tokens)");
    load.finish();
    PhaseStats before, during, after_s;
    for (const auto& [t0, ms] : steps) {
        if (t0 < load.start_time())
            before.ms.push_back(ms);
        else if (t0 < load.device_done())
            during.ms.push_back(ms);
        else
            after_s.ms.push_back(ms);
    }
    double extra = 0;
    int slow = 0;
    for (double ms : during.ms) extra += std::max(0.0, ms - before.median()), slow += ms > 1.5 * before.median();
    // The adapter works: a new sequence on its slot decodes a valid token.
    std::vector<runtime::SequenceDriver::Work> probe{{d.add_sequence(load.slot()), bench_prompt(8, cfg.vocab_size)}};
    const auto probe_tokens = b.step(d, probe);
    if (probe_tokens.size() != 1 || probe_tokens[0] < 0 || probe_tokens[0] >= cfg.vocab_size)
        throw_error(ErrorCode::internal, "bench: the loaded adapter gave no valid token");
    nlohmann::json j = load.report();
    j.update({{"phase", "cold_adapter"},
              {"batch", B},
              {"prompt_len", prompt_len},
              {"cold_at", cold_at},
              {"before", before.json()},
              {"during", during.json()},
              {"after", after_s.json()},
              {"during_steps_ms", during.ms},
              {"extra_ms_during_load", extra},
              {"steps_over_1_5x_median", slow}});
    return j;
}

}  // namespace

int run_cold_adapter_bench(const cli::Args& args) {
    const std::string dir = args.require("cold-adapter");
    const int prompt_len = int(args.get_int("prompt-len", 512)), new_tokens = int(args.get_int("new-tokens", 256));
    const int cold_at = int(args.get_int("cold-at", 32)), max_rank = int(args.get_int("max-lora-rank", 64));
    const bool json = args.flag("json");
    if (prompt_len < 1 || cold_at < 2 || new_tokens <= cold_at || max_rank < 1)
        throw_expected(ErrorCode::invalid_argument,
                       "--cold-adapter needs --prompt-len >= 1, --cold-at >= 2 (steps before "
                       "the load are the baseline), --new-tokens > --cold-at and "
                       "--max-lora-rank >= 1");
    const std::vector<int> batches = parse_list(args.get("batch", "8"), "batch");
    BenchRunner b = make_bench_runner(args, std::max(prompt_len, 4096));
    const model::ModelConfig& cfg = b.runner->config();
    {  // validate up front: a bad adapter is a clear error, never a half-timed run
        lora::AdapterPlan plan = lora::plan_adapter(dir, &cfg, max_rank);
        emit(json,
             {{"device", b.runner->device_name()},
              {"model", cfg.architecture_name},
              {"adapter", plan.name},
              {"adapter_file_mib", double(std::filesystem::file_size(plan.file->path())) / 1048576.0},
              {"modules", plan.modules.size()},
              {"slot_max_rank", max_rank}},
             "cold adapter '" + plan.name + "' (" + std::to_string(plan.modules.size()) + " modules, " +
                 std::to_string(std::filesystem::file_size(plan.file->path()) / 1048576.0) + " MiB) on " +
                 b.runner->device_name());
    }
    for (int B : batches) {
        nlohmann::json j = run_one(b, dir, B, prompt_len, new_tokens, cold_at, max_rank);
        char text[800];
        std::snprintf(
            text, sizeof text,
            "batch %d: disk->host %.1f ms, prepare (loader thread) %.1f ms%s, slot load on the loop %.1f ms, "
            "host->device (call to landed) "
            "%.1f ms, disk->device %.1f ms%s | step median/max: before %.2f/%.2f ms, during (%d steps) %.2f/%.2f ms, "
            "after %.2f/%.2f ms; extra %.1f ms, %d steps over 1.5x",
            B, j["disk_to_host_ms"].get<double>(), j["prepare_ms"].get<double>(),
            j["prepared"].get<bool>() ? "" : " (no prepared form: the slot load converts on the loop)",
            j["load_lora_slot_call_ms"].get<double>(), j["host_to_device_ms"].get<double>(),
            j["disk_to_device_ms"].get<double>(),
            j["page_cache_dropped"].get<bool>() ? "" : " (page cache NOT dropped)",
            j["before"]["median_ms"].get<double>(), j["before"]["max_ms"].get<double>(),
            j["during"]["steps"].get<int>(), j["during"]["median_ms"].get<double>(),
            j["during"]["max_ms"].get<double>(), j["after"]["median_ms"].get<double>(),
            j["after"]["max_ms"].get<double>(), j["extra_ms_during_load"].get<double>(),
            j["steps_over_1_5x_median"].get<int>());
        emit(json, j, text);
    }
    return 0;
}

}  // namespace loradesk::bench
