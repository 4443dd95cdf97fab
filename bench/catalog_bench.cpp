// catalog_bench: 10,000 registered adapters — filtered, sorted listing latency — and sustained StatsSink
// ingestion rate (events recorded and committed per second). Checks results before timing; prints the
// unfiltered full listing as the baseline measured in the same run.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "catalog/catalog.h"
#include "catalog/stats_sink.h"
#include "core/sha256.h"

using namespace loradesk;
using namespace loradesk::catalog;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

template <class Fn>
double best_of(int n, Fn&& fn) {
    double best = 1e30;
    for (int i = 0; i < n; ++i) {
        auto t = Clock::now();
        fn();
        best = std::min(best, ms_since(t));
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    constexpr int kAdapters = 10000;
    std::string dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "catalog_bench").string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::string db = dir + "/catalog.sqlite3";
    Catalog c(db);
    auto t_reg = Clock::now();
    {
        // One transaction per adapter, as the importer does (WAL + synchronous=NORMAL: no fsync per commit).
        for (int i = 0; i < kAdapters; ++i) {
            model::AdapterSummary s;
            s.digest = sha256_hex("bench " + std::to_string(i));
            s.name = "adapter-" + std::to_string(i);
            s.path = "/adapters/" + s.name;
            s.base_model = i % 2 ? "Qwen/Qwen3-0.6B" : "meta-llama/Llama-3.2-1B";
            s.rank = 8 << (i % 4);
            s.size_bytes = std::size_t(1000 + (i * 7919) % 100000);
            s.targets = {"q_proj", "v_proj"};
            c.register_adapter(s);
        }
    }
    std::printf("registered %d adapters in %.0f ms\n", kAdapters, ms_since(t_reg));
    for (int i = 0; i < kAdapters; i += 3) c.set_tier(sha256_hex("bench " + std::to_string(i)), Tier::cpu);
    c.db().exec("UPDATE adapters SET pinned = (id % 5 = 0), last_used_unix = (id * 7919) % 100000");

    ListQuery filtered;
    filtered.name_contains = "7";
    filtered.base_model = "Qwen/Qwen3-0.6B";
    filtered.sort = SortKey::last_used;
    ListQuery pinned_cpu;
    pinned_cpu.pinned = true;
    pinned_cpu.tier = Tier::cpu;
    pinned_cpu.sort = SortKey::size;
    std::size_t n_all = c.list().size(), n_f = c.list(filtered).size(), n_p = c.list(pinned_cpu).size();
    if (n_all != kAdapters || n_f == 0 || n_f >= n_all || n_p == 0) {
        std::fprintf(stderr, "unexpected listing sizes %zu %zu %zu\n", n_all, n_f, n_p);
        return 1;
    }
    double t_all = best_of(20, [&] { c.list(); });
    double t_f = best_of(20, [&] { c.list(filtered); });
    double t_p = best_of(20, [&] { c.list(pinned_cpu); });
    std::printf("list all (baseline, %zu rows, by name):                %7.2f ms\n", n_all, t_all);
    std::printf("list name~'7' base=Qwen sort=last-used (%zu rows):     %7.2f ms  (%.2fx baseline)\n", n_f, t_f,
                t_f / t_all);
    std::printf("list pinned tier=cpu sort=size (%zu rows):              %7.2f ms  (%.2fx baseline)\n", n_p, t_p,
                t_p / t_all);

    // Ingestion: 2,000,000 request events over 100 adapters and 10 minutes, as fast as one thread records.
    constexpr int kEvents = 2'000'000;
    std::vector<std::string> digests;
    for (int i = 0; i < 100; ++i) digests.push_back(sha256_hex("bench " + std::to_string(i)));
    int64_t t0 = 1'699'999'980'000;
    auto t_ing = Clock::now();
    double record_ms;
    {
        StatsSink sink(db);
        for (int i = 0; i < kEvents; ++i) {
            StatsEvent e;
            e.digest = digests[i % 100];
            e.time_ms = t0 + int64_t(i) * 600'000 / kEvents;
            e.prompt_tokens = 100;
            e.completion_tokens = 20;
            e.ttft_ms = 5 + i % 200;
            e.e2e_ms = 50 + i % 2000;
            sink.record(e);
        }
        record_ms = ms_since(t_ing);
        sink.flush();
        auto k = sink.counters();
        if (k.written != uint64_t(kEvents)) {
            std::fprintf(stderr, "sink wrote %llu of %d events\n", (unsigned long long)k.written, kEvents);
            return 1;
        }
        std::printf("stats sink: %llu write transactions\n", (unsigned long long)k.batches);
    }
    double total_ms = ms_since(t_ing);
    int64_t stored = c.db().query_int("SELECT SUM(requests) FROM stats_minute").value_or(0);
    if (stored != kEvents) {
        std::fprintf(stderr, "stored %lld requests, expected %d\n", (long long)stored, kEvents);
        return 1;
    }
    std::printf(
        "ingestion: %d events recorded in %.0f ms (%.0f events/s on the caller), committed in %.0f ms "
        "(%.0f events/s sustained)\n",
        kEvents, record_ms, kEvents / record_ms * 1000, total_ms, kEvents / total_ms * 1000);
    if (argc <= 1) std::filesystem::remove_all(dir);
    return 0;
}
