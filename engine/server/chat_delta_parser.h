// Splits generated chat text, as it streams in, into OpenAI delta parts: reasoning_content (Qwen3
// "<think>…</think>" at the start), content, and tool calls (Hermes/Qwen "<tool_call>{json}</tool_call>"
// blocks, when the request gave tools). Holds back only what could still be the start of a tag, so the
// streamed and non-streamed answers are built by the same code. Not thread-safe; one per choice.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loradesk::server {

struct ChatDelta {
    std::string reasoning;
    std::string content;
    std::vector<nlohmann::ordered_json> tool_calls;  // {"index","id","type","function":{name,arguments}}

    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class ChatDeltaParser {
public:
    explicit ChatDeltaParser(bool parse_tool_calls) : m_tools(parse_tool_calls) {}

    ChatDelta feed(const std::string& text);
    ChatDelta finish();  // flushes what was held back (an unterminated tag becomes plain text)
    int n_tool_calls() const { return m_n_calls; }

private:
    enum class Mode { start, reasoning_start, reasoning, after_reasoning, content };
    void step(ChatDelta& out, bool final);
    void emit_content(ChatDelta& out, std::size_t n);

    bool m_tools;
    Mode m_mode = Mode::start;
    std::string m_pending;
    int m_n_calls = 0;
};

}  // namespace loradesk::server
