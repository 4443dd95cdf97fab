#include "engine_cli.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "hub/hf_cache.h"
#include "server/tool_call_format.h"

namespace loradesk::cli {

std::vector<OptionSpec> engine_option_specs() {
    return {
        {"model", "DIR|ORG/NAME[@REV]",
         "Hugging Face model folder, or a Hub id read from the Hugging Face cache (loradeskd pull fetches it; "
         "default: the demo model in the data directory)"},
        {"adapters", "DIR", "folder whose subfolders are PEFT adapters, registered by folder name", true},
        {"adapter", "NAME=DIR|NAME=ORG/NAME[@REV]",
         "register one adapter under NAME, from a folder or from the Hugging Face cache", true},
        {"host", "ADDR", "address to listen on (default 127.0.0.1)"},
        {"port", "N", "port to listen on (default 8080)"},
        {"api-key", "KEY",
         "require this bearer key on every request except /health (shows in ps: prefer --api-key-file or the "
         "LORADESK_API_KEY environment variable)"},
        {"api-key-file", "FILE", "read the API key from the first line of FILE (make it readable by you only)"},
        {"device", "auto|cpu|cuda", "where to run the model (default auto)"},
        {"max-loras", "N",
         "distinct adapters in one batch = GPU adapter slots (default: planned from GPU memory, up to 8; 4 on the "
         "CPU)"},
        {"max-loras-cpu", "N", "adapters kept in host memory (default 4096; --host-lora-memory bounds them first)"},
        {"max-lora-rank", "R", "largest adapter rank accepted (default 64)"},
        {"kv-memory", "GB", "memory for the KV page pool (default: what the GPU memory plan leaves; 0.5 on the CPU)"},
        {"gpu-memory-utilization", "F",
         "fraction of the GPU the engine may use in all: weights, slots, KV (default 0.9)"},
        {"host-lora-memory", "GB", "host memory for adapters held off the GPU (default 8)"},
        {"kv-reserve-tokens", "N",
         "admit a request only if each running one can still grow this many tokens (default 0)"},
        {"chat-template", "FILE",
         "Jinja chat template to use instead of the model's (models without one serve completions only)"},
        {"tool-call-parser", "NAME",
         "tool-call syntax of the model's replies: auto (read from the chat template), hermes, llama3_json, mistral "
         "or qwen3_coder (default auto)"},
        {"metrics-adapter-window", "S",
         "/metrics lists per-adapter series for adapters active in the last S seconds (default 600; 0 = all)"},
        {"max-batch-tokens", "N", "tokens per engine step (default 2048)"},
        {"max-context", "N", "context length cap (default: the model's)"},
        {"policy", "fcfs|pack", "scheduling policy (default fcfs)"},
        {"threads", "N", "CPU runner threads (default: all cores)"},
        {"fp8-weight-only", "",
         "block-scaled FP8 models on a GPU: keep activations in bf16 instead of the faster W8A8 fp8 GEMM (numerics "
         "then do not depend on the batch size)"},
        {"data-dir", "DIR", "catalog and state (default $XDG_DATA_HOME/loradesk)"},
        {"start-fresh", "", "if the catalog is damaged, keep it as catalog.sqlite3.corrupt-<time> and start a new one"},
        {"demo", "", "serve the demo model even if --model is given elsewhere"},
        {"watch-interval", "MS",
         "poll --adapters folders for new, changed and removed adapters (default 2000; 0 = off)"},
        {"shutdown-timeout", "S",
         "on SIGTERM/SIGINT, let running requests finish for up to S seconds before cancelling them (default 10; "
         "a second signal cancels at once)"},
        {"log-level", "LEVEL", "trace|debug|info|warn|error (default info)"},
    };
}

std::string model_folder(const Args& args, const std::string& option) {
    return hub::resolve_reference(args.require(option), hub::RepoContent::model);
}

std::string default_data_dir() {
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/loradesk";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/loradesk";
    throw_expected(ErrorCode::invalid_argument, "neither XDG_DATA_HOME nor HOME is set: pass --data-dir DIR");
}

namespace {

int bounded_int(const Args& args, const std::string& name, long long fallback, long long lo, long long hi) {
    long long v = args.get_int(name, fallback);
    if (v < lo || v > hi)
        throw_expected(ErrorCode::invalid_argument, "--" + name + " must be between " + std::to_string(lo) + " and " +
                                                        std::to_string(hi) + ", got " + std::to_string(v));
    return int(v);
}

// The first line of the key file, without surrounding whitespace (editors add a final newline).
std::string read_key_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw_expected(ErrorCode::not_found, "--api-key-file: cannot read '" + path + "'");
    std::string key;
    std::getline(in, key);
    const auto first = key.find_first_not_of(" \t\r"), last = key.find_last_not_of(" \t\r");
    key = first == std::string::npos ? std::string() : key.substr(first, last - first + 1);
    if (key.empty())
        throw_expected(ErrorCode::invalid_argument, "--api-key-file: '" + path + "' has no key on its first line");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
        log::warn("the API key file '{}' can be read by other users; chmod 600 it", path);
    return key;
}

// --api-key or --api-key-file (not both), else $LORADESK_API_KEY, else none.
std::string api_key_from(const Args& args) {
    if (args.has("api-key") && args.has("api-key-file"))
        throw_expected(ErrorCode::invalid_argument, "give --api-key or --api-key-file, not both");
    if (args.has("api-key-file")) return read_key_file(args.get("api-key-file"));
    if (args.has("api-key")) return args.get("api-key");
    const char* env = std::getenv("LORADESK_API_KEY");
    return env ? std::string(env) : std::string();
}

}  // namespace

void resolve_model_reference(api::EngineOptions& e) {
    // A Hub id is served under its own name, not under its snapshot folder's commit hash.
    const std::string resolved = hub::resolve_reference(e.model_dir, hub::RepoContent::model);
    if (resolved != e.model_dir) e.served_model_id = hub::parse_hub_id(e.model_dir)->repo;
    e.model_dir = resolved;
}

ServeOptions serve_options_from_args(const Args& args) {
    ServeOptions o;
    auto& e = o.engine;
    e.model_dir = args.get("model");
    o.demo = args.flag("demo") || e.model_dir.empty();
    if (!o.demo) resolve_model_reference(e);
    e.adapter_dirs = args.all("adapters");
    for (auto& spec : args.all("adapter")) {
        auto eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw_expected(ErrorCode::invalid_argument, "--adapter expects NAME=DIR, got '" + spec + "'");
        e.named_adapters.emplace_back(spec.substr(0, eq),
                                      hub::resolve_reference(spec.substr(eq + 1), hub::RepoContent::adapter));
    }
    e.device = args.get("device", "auto");
    if (e.device != "auto" && e.device != "cpu" && e.device != "cuda")
        throw_expected(ErrorCode::invalid_argument, "--device must be auto, cpu or cuda, got '" + e.device + "'");
    e.data_dir = args.has("data-dir") ? args.get("data-dir") : default_data_dir();
    e.catalog_start_fresh = args.flag("start-fresh");
    if (args.has("max-loras")) e.max_loras = bounded_int(args, "max-loras", 4, 1, 1024);
    e.max_loras_cpu = bounded_int(args, "max-loras-cpu", e.max_loras_cpu, 1, 100000);
    e.max_lora_rank = bounded_int(args, "max-lora-rank", e.max_lora_rank, 1, 4096);
    e.max_batch_tokens = bounded_int(args, "max-batch-tokens", e.max_batch_tokens, 16, 1 << 20);
    e.max_context = bounded_int(args, "max-context", 0, 0, 1 << 24);
    e.cpu_threads = bounded_int(args, "threads", 0, 0, 1024);
    e.fp8_weight_only = args.flag("fp8-weight-only");
    if (args.has("kv-memory")) {
        e.kv_memory_gb = args.get_double("kv-memory", 0);
        if (!(e.kv_memory_gb > 0 && e.kv_memory_gb <= 4096))
            throw_expected(ErrorCode::invalid_argument, "--kv-memory must be a positive number of GB");
    }
    e.gpu_memory_utilization = args.get_double("gpu-memory-utilization", e.gpu_memory_utilization);
    if (!(e.gpu_memory_utilization > 0 && e.gpu_memory_utilization <= 1))
        throw_expected(ErrorCode::invalid_argument, "--gpu-memory-utilization must be in (0, 1], like 0.9");
    if (args.has("host-lora-memory")) {
        const double gb = args.get_double("host-lora-memory", 8);
        if (!(gb > 0 && gb <= 65536))
            throw_expected(ErrorCode::invalid_argument, "--host-lora-memory must be a positive number of GB");
        e.max_cpu_lora_bytes = std::size_t(gb * double(std::size_t(1) << 30));
    }
    e.kv_reserve_tokens = bounded_int(args, "kv-reserve-tokens", e.kv_reserve_tokens, 0, 1 << 24);
    e.chat_template_file = args.get("chat-template");
    e.adapter_watch_interval_ms = bounded_int(args, "watch-interval", e.adapter_watch_interval_ms, 0, 3600 * 1000);
    e.policy = args.get("policy", "fcfs");
    if (e.policy != "fcfs" && e.policy != "pack")
        throw_expected(ErrorCode::invalid_argument, "--policy must be fcfs or pack, got '" + e.policy + "'");
    o.host = args.get("host", o.host);
    o.port = bounded_int(args, "port", o.port, 0, 65535);
    o.api_key = api_key_from(args);
    o.metrics_adapter_window_s =
        bounded_int(args, "metrics-adapter-window", o.metrics_adapter_window_s, 0, 365 * 86400);
    o.tool_call_parser = args.get("tool-call-parser", o.tool_call_parser);
    if (!server::is_tool_call_parser_name(o.tool_call_parser))
        throw_expected(ErrorCode::invalid_argument, "--tool-call-parser must be one of " +
                                                        std::string(server::kToolCallParserNames) + ", got '" +
                                                        o.tool_call_parser + "'");
    o.shutdown_timeout_s = bounded_int(args, "shutdown-timeout", o.shutdown_timeout_s, 0, 3600);
    try {
        o.hub_cache_dir = hub::hub_cache_dir();
    } catch (const ExpectedError&) {
        // No HOME and no HF_* variables: load_lora_adapter then takes folders only.
    }
    return o;
}

}  // namespace loradesk::cli
