// Ollama's wire pieces; see ollama_format.h.
#include "server/ollama_format.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <ctime>

namespace loradesk::server::ollama {

using nlohmann::json;

std::string rfc3339_unix(int64_t unix_seconds, int microseconds) {
    const std::time_t secs = std::time_t(unix_seconds);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec, microseconds);
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    return rfc3339_unix(us / 1000000, int(us % 1000000));
}

namespace {

// A Go duration: [-]{number unit}+ with units ns us µs ms s m h, or "0". Seconds, or nullopt.
std::optional<double> parse_go_duration(const std::string& text) {
    std::size_t i = 0;
    double sign = 1;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) sign = text[i++] == '-' ? -1 : 1;
    if (text.substr(i) == "0") return 0.0;
    if (i == text.size()) return std::nullopt;
    double total = 0;
    while (i < text.size()) {
        const std::size_t start = i;
        while (i < text.size() && (std::isdigit((unsigned char)text[i]) || text[i] == '.')) ++i;
        if (i == start) return std::nullopt;
        double value = 0;
        try {
            value = std::stod(text.substr(start, i - start));
        } catch (const std::exception&) {
            return std::nullopt;
        }
        const std::size_t unit_start = i;
        while (i < text.size() && !std::isdigit((unsigned char)text[i]) && text[i] != '.') ++i;
        const std::string unit = text.substr(unit_start, i - unit_start);
        double scale = 0;
        if (unit == "h")
            scale = 3600;
        else if (unit == "m")
            scale = 60;
        else if (unit == "s")
            scale = 1;
        else if (unit == "ms")
            scale = 1e-3;
        else if (unit == "us" || unit == "\xc2\xb5s")
            scale = 1e-6;
        else if (unit == "ns")
            scale = 1e-9;
        else
            return std::nullopt;
        total += value * scale;
    }
    return sign * total;
}

KeepAliveSpec keep_alive_of(double seconds) {
    if (seconds < 0) return {KeepAlive::keep_loaded, 0};
    if (seconds == 0) return {KeepAlive::unload, 0};
    return {KeepAlive::timed, seconds};
}

}  // namespace

KeepAliveSpec parse_keep_alive(const json& body) {
    auto it = body.find("keep_alive");
    if (it == body.end() || it->is_null()) return {};
    const char* kForm =
        "'keep_alive' must be a duration such as \"5m\", \"1h30m\", \"0\" (unpin the adapter "
        "after the request) or \"-1\" (keep it loaded), or a number of seconds";
    if (it->is_number()) {
        const double s = it->get<double>();
        if (!std::isfinite(s)) throw_invalid("keep_alive", kForm);
        return keep_alive_of(s);
    }
    if (!it->is_string()) throw_invalid("keep_alive", kForm);
    const std::string text = it->get<std::string>();
    if (std::optional<double> s = parse_go_duration(text)) return keep_alive_of(*s);
    // A number in a string counts as seconds (Ollama's Go client sends "-1" and "300" that way).
    char* end = nullptr;
    const double s = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(s)) return keep_alive_of(s);
    throw_invalid("keep_alive", fmt::format("{}; got \"{}\"", kForm, text.substr(0, 40)));
}

std::string adapter_model_name(const api::ModelInfo& model, const std::string& adapter) {
    return model.id + ":" + adapter;
}

std::string family_of(const std::string& architecture) {
    std::string name = architecture;
    for (const char* suffix : {"ForCausalLM", "ForConditionalGeneration", "Model"}) {
        const std::string s(suffix);
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
            name.resize(name.size() - s.size());
            break;
        }
    }
    return to_lower(name);
}

std::string parameter_size(uint64_t n) {
    if (n >= 1000000000ull) return fmt::format("{:.1f}B", double(n) / 1e9);
    if (n >= 1000000ull) return fmt::format("{:.1f}M", double(n) / 1e6);
    if (n >= 1000ull) return fmt::format("{:.1f}K", double(n) / 1e3);
    return std::to_string(n);
}

bool on_cpu(const api::ModelInfo& model) { return model.device.rfind("cpu", 0) == 0; }

std::string quantization_level(const api::ModelInfo& model) {
    if (model.quantization.rfind("fp8", 0) == 0) return "FP8";
    if (model.quantization == "awq") return "AWQ-INT4";
    if (model.quantization == "gptq") return "GPTQ-INT4";
    if (model.parameters == 0 || model.weight_bytes == 0) return "unknown";
    const double bytes_per_weight = double(model.weight_bytes) / double(model.parameters);
    if (bytes_per_weight >= 3.0) return "F32";
    // The CUDA runner holds every checkpoint as bf16, and bf16 is how nearly every checkpoint is published; the
    // facade does not tell an f16 checkpoint on the CPU runner apart from it.
    if (bytes_per_weight >= 1.5) return "BF16";
    return "unknown";
}

ojson model_details(const api::ModelInfo& model, const std::string& parent_model) {
    const std::string family = family_of(model.architecture);
    ojson d;
    d["parent_model"] = parent_model;
    d["format"] = "safetensors";
    d["family"] = family;
    d["families"] = ojson::array({family});
    d["parameter_size"] = parameter_size(model.parameters);
    d["quantization_level"] = quantization_level(model);
    return d;
}

std::string done_reason(api::FinishReason reason) { return reason == api::FinishReason::length ? "length" : "stop"; }

void add_final_stats(ojson& body, const api::FinishEvent& finish, const GenerationTimes& times) {
    const auto ns = [](double ms) { return int64_t(std::llround(std::max(0.0, ms) * 1e6)); };
    const auto total = std::chrono::steady_clock::now() - times.started;
    body["done"] = true;
    body["done_reason"] = done_reason(finish.reason);
    body["total_duration"] = int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(total).count());
    body["load_duration"] = ns(times.load_ms);
    body["prompt_eval_count"] = finish.usage.prompt_tokens;
    body["prompt_eval_duration"] = ns(finish.ttft_ms);
    body["eval_count"] = finish.usage.completion_tokens;
    body["eval_duration"] = ns(finish.latency_ms - finish.ttft_ms);
}

ojson tool_calls_json(const std::vector<ojson>& openai_calls, std::string& content) {
    ojson calls = ojson::array();
    for (const ojson& call : openai_calls) {
        const ojson& fn = call["function"];
        const std::string& text = fn["arguments"].get_ref<const std::string&>();
        ojson args = ojson::parse(text, nullptr, false);
        if (text.empty()) args = ojson::object();
        if (!args.is_object()) {
            ojson as_written;
            as_written["name"] = fn["name"];
            as_written["arguments"] = args.is_discarded() ? ojson(text) : args;
            content += "<tool_call>" + dump_json(as_written) + "</tool_call>";
            continue;
        }
        ojson f;
        f["index"] = int(calls.size());
        f["name"] = fn["name"];
        f["arguments"] = std::move(args);
        calls.push_back(ojson{{"function", std::move(f)}});
    }
    return calls;
}

ojson logprobs_json(const std::vector<api::TokenLogprob>& logprobs) {
    // The entries are OpenAI's chat logprobs (token, logprob, bytes, top_logprobs), which Ollama adopted.
    return chat_logprobs_json(logprobs)["content"];
}

HttpResponse error_response(const ApiError& error) {
    HttpResponse r;
    r.status = error.status;
    r.body = dump_json(ojson{{"error", error.what()}});
    if (error.retry_after_s > 0) r.set_header("Retry-After", std::to_string(error.retry_after_s));
    return r;
}

std::string error_line(const ApiError& error) { return dump_json(ojson{{"error", error.what()}}) + "\n"; }

}  // namespace loradesk::server::ollama
