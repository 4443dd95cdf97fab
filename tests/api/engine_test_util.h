// Helpers shared by the engine facade tests (tests/api): a tiny synthetic base model, adapter folders,
// a small CPU engine, running requests to the end, finding an adapter in the engine's list.
#pragma once

#include <QtTest>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "api/engine_impl.h"
#include "lora/adapter_synth.h"
#include "model/synth_model.h"

namespace loradesk::test {

inline api::EngineImpl& impl(api::Engine& engine) { return dynamic_cast<api::EngineImpl&>(engine); }

// A small CPU engine over `model_dir` with these adapter roots; no background folder polls.
inline api::EngineOptions cpu_options(const std::string& model_dir, std::vector<std::string> adapter_dirs) {
    api::EngineOptions o;
    o.model_dir = model_dir;
    o.device = "cpu";
    o.cpu_threads = 1;
    o.kv_memory_gb = 0.02;
    o.adapter_dirs = std::move(adapter_dirs);
    o.adapter_watch_interval_ms = 0;
    return o;
}

// create_engine or a fatal test failure; with `wait_read`, returns once every adapter folder queued at
// start-up has been read (most tests start from a fully read set).
inline std::unique_ptr<api::Engine> start_engine(const api::EngineOptions& o, bool wait_read = true) {
    auto made = api::create_engine(o);
    if (!made.ok()) qFatal("create_engine: %s", made.status().message.c_str());
    if (wait_read) impl(*made.value()).wait_adapters_read();
    return std::move(made).value();
}

// Greedy, EOS ignored: exactly max_tokens tokens.
inline api::GenerateRequest greedy_request(const std::string& model, std::vector<int32_t> prompt, int max_tokens) {
    api::GenerateRequest r;
    r.model = model;
    r.prompt_ids = std::move(prompt);
    r.sampling.temperature = 0;
    r.stop.max_tokens = max_tokens;
    r.stop.ignore_eos = true;
    return r;
}

// Reads a submitted request to its end: its finish, or the failure (at submission or as an ErrorEvent).
inline Result<api::FinishEvent> read_to_end(Result<std::shared_ptr<api::RequestStream>> submitted) {
    if (!submitted.ok()) return submitted.status();
    auto stream = submitted.value();
    for (int i = 0; i < 600; ++i) {
        auto ev = stream->next(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (auto* err = std::get_if<api::ErrorEvent>(&*ev)) return err->status;
        if (auto* fin = std::get_if<api::FinishEvent>(&*ev)) return *fin;
    }
    return Status::failure(ErrorCode::unavailable, "request did not finish in 60 s");
}

// Submits a short greedy request and reads it to the end: the digest it ran with, or its failure.
inline Result<std::string> run_request(api::Engine& engine, const std::string& model, int max_tokens = 3) {
    auto submitted = engine.submit(greedy_request(model, {1, 2, 3, 4}, max_tokens));
    if (!submitted.ok()) return submitted.status();
    const std::string digest = submitted.value()->info().adapter_digest;
    Result<api::FinishEvent> fin = read_to_end(std::move(submitted));
    if (!fin.ok()) return fin.status();
    if (fin.value().reason != api::FinishReason::length || fin.value().usage.completion_tokens != max_tokens)
        return Status::failure(ErrorCode::io, "request ended early");
    return digest;
}

inline std::optional<api::AdapterInfo> listed(const api::Engine& engine, const std::string& name) {
    for (auto& a : engine.adapters())
        if (a.name == name) return a;
    return std::nullopt;
}

inline int count_listed(const api::Engine& engine, const std::string& name) {
    int n = 0;
    for (auto& a : engine.adapters()) n += a.name == name;
    return n;
}

// Moves an adapter folder's file times forward, so its signature changes even on filesystems with
// coarse timestamps.
inline void touch_forward(const std::filesystem::path& dir, int seconds) {
    namespace fs = std::filesystem;
    for (const char* f : {"adapter_config.json", "adapter_model.safetensors"})
        fs::last_write_time(dir / f, fs::last_write_time(dir / f) + std::chrono::seconds(seconds));
}

inline model::ModelConfig synth_tiny_model(const std::string& dir) {
    model::SynthOptions so;
    so.preset = "tiny";
    so.out_dir = dir;
    return model::synth_model(so);
}

inline void synth_adapter(const model::ModelConfig& config, const std::filesystem::path& dir, uint64_t seed,
                          int rank = 4) {
    lora::SynthAdapterSpec spec;
    spec.rank = rank;
    spec.seed = seed;
    lora::synthesize_adapter(config, spec, dir.string());
}

}  // namespace loradesk::test
