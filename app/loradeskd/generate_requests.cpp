#include "generate_requests.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "adapter_option.h"
#include "api/engine.h"
#include "core/error.h"
#include "engine_cli.h"

namespace loradesk::cli {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void bad_line(int line, const std::string& what) {
    throw_expected(ErrorCode::invalid_argument, "--requests-file line " + std::to_string(line) + ": " + what);
}

api::GenerateRequest parse_request(const json& j, int line) {
    if (!j.is_object()) bad_line(line, "expected a JSON object");
    api::GenerateRequest r;
    r.id =
        j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump()) : std::to_string(line);
    if (j.contains("adapter") && !j["adapter"].is_null()) {
        if (!j["adapter"].is_string()) bad_line(line, "\"adapter\" must be a name or null");
        r.model = j["adapter"].get<std::string>();
    }
    try {
        if (j.contains("prompt_ids")) r.prompt_ids = j["prompt_ids"].get<std::vector<int32_t>>();
        if (j.contains("prompt")) r.prompt = j["prompt"].get<std::string>();
        if (j.contains("messages")) r.messages = j["messages"];
        r.stop.max_tokens = j.value("max_tokens", 16);
        r.stop.ignore_eos = j.value("ignore_eos", false);
        if (j.contains("stop")) {
            r.stop.stop = j["stop"].is_string() ? std::vector<std::string>{j["stop"].get<std::string>()}
                                                : j["stop"].get<std::vector<std::string>>();
        }
        r.sampling.temperature = j.value("temperature", 0.0f);
        r.sampling.top_p = j.value("top_p", 1.0f);
        r.sampling.top_k = j.value("top_k", 0);
        r.sampling.min_p = j.value("min_p", 0.0f);
        if (j.contains("seed")) r.sampling.seed = j["seed"].get<uint64_t>();
    } catch (const json::exception& e) {
        bad_line(line, std::string("a field has the wrong type: ") + e.what());
    }
    return r;
}

const char* finish_name(api::FinishReason r) {
    switch (r) {
        case api::FinishReason::stop:
            return "stop";
        case api::FinishReason::length:
            return "length";
        case api::FinishReason::cancelled:
            return "cancelled";
    }
    return "stop";
}

json run_one(api::RequestStream& stream) {
    json out = {{"output_ids", json::array()}, {"text", ""}};
    std::string text;
    for (;;) {
        auto ev = stream.next(std::chrono::milliseconds(1000));
        if (!ev) continue;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            for (int32_t id : t->token_ids) out["output_ids"].push_back(id);
            text += t->text;
        } else if (auto* f = std::get_if<api::FinishEvent>(&*ev)) {
            out["text"] = text;
            out["finish_reason"] = finish_name(f->reason);
            out["prompt_tokens"] = f->usage.prompt_tokens;
            out["cached_tokens"] = f->usage.cached_tokens;
            out["completion_tokens"] = f->usage.completion_tokens;
            out["ttft_ms"] = f->ttft_ms;
            out["latency_ms"] = f->latency_ms;
            return out;
        } else {
            out["text"] = text;
            out["error"] = std::get<api::ErrorEvent>(*ev).status.message;
            return out;
        }
    }
}

}  // namespace

int run_generate_requests(const Args& args) {
    api::EngineOptions o;
    o.model_dir = cli::model_folder(args);
    for (auto& spec : args.all("adapter")) o.named_adapters.push_back(split_adapter_spec(spec));
    o.device = args.get("device", "cpu");
    o.cpu_threads = int(args.get_int("threads", 0));
    o.max_loras = int(args.get_int("max-loras", 4));
    o.max_lora_rank = int(args.get_int("max-lora-rank", 256));
    o.kv_memory_gb = args.get_double("kv-memory", 0.25);
    o.policy = args.get("policy", "fcfs");

    std::vector<api::GenerateRequest> requests;
    {
        std::ifstream in(args.require("requests-file"));
        if (!in)
            throw_expected(ErrorCode::not_found, "cannot read --requests-file '" + args.get("requests-file") + "'");
        std::string line;
        for (int n = 1; std::getline(in, line); ++n) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            json j;
            try {
                j = json::parse(line);
            } catch (const json::exception& e) {
                bad_line(n, std::string("not valid JSON: ") + e.what());
            }
            requests.push_back(parse_request(j, n));
        }
    }
    auto made = api::create_engine(o);
    if (!made.ok()) throw_expected(made.status().code, made.status().message);
    auto engine = std::move(made).value();

    // Submit everything first so the scheduler sees the requests together, then drain each stream.
    std::vector<json> results(requests.size());
    std::vector<std::shared_ptr<api::RequestStream>> streams(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        auto s = engine->submit(requests[i]);
        if (s.ok()) {
            streams[i] = s.value();
        } else {
            results[i] = {{"error", s.status().message}};
        }
    }
    std::vector<std::thread> readers;
    for (std::size_t i = 0; i < requests.size(); ++i)
        if (streams[i]) readers.emplace_back([&, i] { results[i] = run_one(*streams[i]); });
    for (auto& t : readers) t.join();

    int failures = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
        json line = {{"id", requests[i].id}};
        for (auto& [k, v] : results[i].items()) line[k] = v;
        failures += line.contains("error") ? 1 : 0;
        std::printf("%s\n", line.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    }
    engine->shutdown();
    return failures ? 1 : 0;
}

}  // namespace loradesk::cli
