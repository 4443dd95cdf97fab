// libFuzzer target: the chat-template engine (engine/tokenizer/jinja) two ways, picked by the first byte:
//  - even: the rest is a template source, parsed and rendered over a fixed conversation (system, user,
//    assistant with a tool call, tool result) with tools and the usual special tokens;
//  - odd: the rest is a JSON messages array rendered by one of the committed real-shaped templates
//    (tests/chat_template/data: ChatML, Llama 3.1 with tools, Mistral), as a request's messages would be.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "fuzz_check.h"
#include "fuzz_paths.h"
#include "tokenizer/jinja/chat_template.h"

namespace {

using namespace loradesk;
using nlohmann::ordered_json;

constexpr std::size_t kMaxInput = 8192;

const ordered_json& tokenizer_config() {
    static const ordered_json c = {
        {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"pad_token", "<pad>"}};
    return c;
}

const ordered_json& fixed_messages() {
    static const ordered_json m = ordered_json::parse(R"([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris? Answer in \u00e9l\u00e8ves' French."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21.5}"},
        {"role": "assistant", "content": [{"type": "text", "text": "21.5 degrees"}, {"type": "text", "text": "."}]},
        {"role": "user", "content": "Thanks"}
    ])");
    return m;
}

const ordered_json& fixed_tools() {
    static const ordered_json t = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
        "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
        "days": {"type": "integer"}}, "required": ["city"]}}}])");
    return t;
}

const std::vector<jinja::ChatTemplate>& real_templates() {
    static const std::vector<jinja::ChatTemplate> t = [] {
        std::vector<jinja::ChatTemplate> out;
        for (const char* name : {"chatml.jinja", "llama31_tools_style.jinja", "mistral_style.jinja"}) {
            std::string source = read_text_file(fuzz_source_path(std::string("tests/chat_template/data/") + name));
            out.push_back(jinja::ChatTemplate::from_config(tokenizer_config(), source));
        }
        return out;
    }();
    return t;
}

void fuzz_template_source(const std::string& source, bool add_generation_prompt) {
    std::unique_ptr<jinja::ChatTemplate> t;
    try {
        t = std::make_unique<jinja::ChatTemplate>(jinja::ChatTemplate::from_config(tokenizer_config(), source));
    } catch (const ExpectedError&) {
        return;  // syntax errors, unknown filters: refused at load with a message
    }
    try {
        (void)t->render(fixed_messages(), fixed_tools(), add_generation_prompt, ordered_json::object());
    } catch (const ExpectedError&) {
        // raise_exception, type errors, undefined attributes, the sandbox's limits
    }
}

void fuzz_messages(const std::string& json_text, std::size_t which, bool add_generation_prompt) {
    ordered_json messages;
    try {
        messages = ordered_json::parse(json_text);
    } catch (const ordered_json::exception&) {
        return;
    }
    const auto& templates = real_templates();
    try {
        (void)templates[which % templates.size()].render(messages, fixed_tools(), add_generation_prompt,
                                                         ordered_json::object());
    } catch (const ExpectedError&) {
        // messages of the wrong shape are refused with a message
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size > kMaxInput || size == 0) return -1;
    const uint8_t control = data[0];
    const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (control & 1)
        fuzz_messages(rest, control >> 2, control & 2);
    else
        fuzz_template_source(rest, control & 2);
    return 0;
}
