// lora_load_bench: disk -> host load time of a PEFT adapter from a warm page cache (mmap, header
// validation, one bf16 -> f32 conversion pass), at real model shapes. Baseline in the same run: a
// plain memcpy of the same tensor bytes out of the mapping, and the previous conversion (resize, which
// zero-fills, then convert). Also reports plan-only and digest times. --keep-freed 1 applies the malloc
// settings of the app mains (core/heap_policy.h: freed LoRA buffers stay in the heap), as in a long-running server.
//   lora_load_bench [--preset qwen3-8b] [--rank 16] [--dtype bf16] [--iters 10] [--dir DIR] [--keep-freed 0|1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/heap_policy.h"
#include "core/thread_pool.h"
#include "lora/adapter_loader.h"
#include "lora/adapter_synth.h"
#include "model/synth_model.h"

using namespace loradesk;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

template <class Fn>
double median_ms(int iters, Fn&& fn) {
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        fn();
        t.push_back(ms_since(t0));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::string preset = "qwen3-8b", dtype = "bf16";
    std::string dir = (std::filesystem::temp_directory_path() / "loradesk_lora_bench").string();
    int rank = 16, iters = 10;
    bool keep_freed = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i], v = argv[i + 1];
        if (k == "--preset")
            preset = v;
        else if (k == "--rank")
            rank = std::stoi(v);
        else if (k == "--dtype")
            dtype = v;
        else if (k == "--iters")
            iters = std::max(1, std::stoi(v));
        else if (k == "--dir")
            dir = v;
        else if (k == "--keep-freed")
            keep_freed = v != "0";
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 2;
        }
    }
    if (keep_freed) keep_freed_heap();  // what loradeskd and the desktop app do at start
    try {
        model::ModelConfig base = model::synth_preset_config(preset, 1000);
        lora::SynthAdapterSpec spec;
        spec.rank = rank;
        spec.alpha = 2.0 * rank;
        spec.dtype = dtype == "f32" ? DType::f32 : DType::bf16;
        std::string adapter = dir + "/" + preset + "-r" + std::to_string(rank) + "-" + dtype;
        if (!std::filesystem::exists(adapter + "/adapter_model.safetensors"))
            lora::synthesize_adapter(base, spec, adapter);
        const auto file_bytes = std::filesystem::file_size(adapter + "/adapter_model.safetensors");

        // Check the result before timing anything: every module present, values converted exactly.
        runtime::LoraWeights w = lora::load_adapter(adapter, base, rank);
        lora::AdapterPlan plan = lora::plan_adapter(adapter, &base, rank);
        auto matches = [&](const runtime::LoraWeights& x) {
            if (x.max_rank() != rank) return false;
            for (auto& m : plan.modules) {
                auto& d = x.layers[std::size_t(m.layer)][int(m.module)];
                if (d.rank != m.rank || d.scale != m.scale || d.a != m.a->to_f32() || d.b != m.b->to_f32())
                    return false;
            }
            return true;
        };
        if (plan.modules.size() != std::size_t(base.n_layers) * runtime::kNumLoraModules || !matches(w)) {
            std::fprintf(stderr, "lora_load_bench: loaded weights do not match the file\n");
            return 1;
        }

        // Baseline: copy the same tensor bytes out of a fresh mapping (page cache -> RAM, no conversion).
        std::vector<uint8_t> sink(file_bytes);
        double copy_ms = median_ms(iters, [&] {
            lora::AdapterPlan p = lora::plan_adapter(adapter, &base, rank);
            std::size_t off = 0;
            for (auto& t : p.file->tensors()) {
                std::memcpy(sink.data() + off, t.data, t.nbytes);
                off += t.nbytes;
            }
        });
        // The loader before one-pass conversion: resize (zero-fills the fresh buffer), then convert.
        double prev_ms = median_ms(iters, [&] {
            lora::AdapterPlan p = lora::plan_adapter(adapter, &base, rank);
            runtime::LoraWeights x;
            x.layers.resize(std::size_t(base.n_layers));
            for (auto& m : p.modules) {
                auto& d = x.layers[std::size_t(m.layer)][int(m.module)];
                d.a.resize(std::size_t(m.a->numel()));
                d.b.resize(std::size_t(m.b->numel()));
                convert_to_f32(m.a->data, m.a->dtype, d.a.size(), d.a.data());
                convert_to_f32(m.b->data, m.b->dtype, d.b.size(), d.b.data());
            }
        });
        double plan_ms = median_ms(iters, [&] { lora::plan_adapter(adapter, &base, rank); });
        double load_ms = median_ms(iters, [&] { runtime::LoraWeights x = lora::load_adapter(adapter, base, rank); });
        ThreadPool pool(0);
        runtime::LoraWeights wp = lora::load_adapter(adapter, base, rank, &pool);
        if (!matches(wp)) {
            std::fprintf(stderr, "lora_load_bench: parallel load does not match the file\n");
            return 1;
        }
        double par_ms =
            median_ms(iters, [&] { runtime::LoraWeights x = lora::load_adapter(adapter, base, rank, &pool); });
        // As TieredStore does it: the load runs on a disk-reader thread, the weights die on another thread.
        ThreadPool io(2);  // one worker besides the caller
        double worker_ms = median_ms(iters, [&] {
            std::promise<runtime::LoraWeights> done;
            io.submit([&] {
                try {
                    done.set_value(lora::load_adapter(adapter, base, rank));
                } catch (...) {
                    done.set_exception(std::current_exception());
                }
            });
            runtime::LoraWeights x = done.get_future().get();
        });
        // TieredStore's steady state: the read reuses the buffers of the adapter it evicted (recycle bin).
        runtime::LoraWeights recycled = lora::load_adapter(adapter, base, rank);
        double reuse_ms = median_ms(iters, [&] {
            std::promise<runtime::LoraWeights> done;
            io.submit([&] {
                try {
                    done.set_value(lora::load_adapter(adapter, base, rank, nullptr, &recycled));
                } catch (...) {
                    done.set_exception(std::current_exception());
                }
            });
            recycled = done.get_future().get();
        });
        if (!matches(recycled)) {
            std::fprintf(stderr, "lora_load_bench: load into reused buffers does not match the file\n");
            return 1;
        }
        double digest_ms = median_ms(std::max(1, iters / 5), [&] { lora::adapter_digest(plan); });

        std::printf("adapter: %s rank %d %s, %zu modules, file %.1f MB, host f32 %.1f MB%s\n", preset.c_str(), rank,
                    dtype.c_str(), plan.modules.size(), double(file_bytes) / 1e6, double(w.bytes()) / 1e6,
                    keep_freed ? ", freed heap kept" : "");
        std::printf("plan (mmap + header + validation): %8.2f ms\n", plan_ms);
        std::printf("load (plan + convert to f32):      %8.2f ms   (goal <= 30 ms)\n", load_ms);
        std::printf("previous loader (resize + convert): %7.2f ms\n", prev_ms);
        std::printf("load, convert on %d threads:        %8.2f ms\n", pool.size(), par_ms);
        std::printf("load on a disk-reader thread:      %8.2f ms\n", worker_ms);
        std::printf("  same, into evicted buffers:      %8.2f ms   (TieredStore steady state)\n", reuse_ms);
        std::printf("baseline memcpy of tensor bytes:   %8.2f ms   load/baseline %.2fx\n", copy_ms, load_ms / copy_ms);
        std::printf("digest (sha256, registration):     %8.2f ms\n", digest_ms);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lora_load_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
