// Splits generated chat text, as it streams in, into OpenAI delta parts: reasoning_content (reasoning_splitter.h:
// <think>…</think>, opened by the model or already by the prompt), content, and tool calls in the model
// family's syntax (tool_call_parser.h) when the request gave tools. Holds back only what could still be the
// start of a marker, so the streamed and non-streamed answers are built by the same code. Each call comes
// whole in one delta (its first and only fragment carries the complete arguments). Not thread-safe; one per
// choice.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_splitter.h"
#include "server/tool_call_format.h"
#include "server/tool_call_parser.h"

namespace loradesk::server {

struct ChatDelta {
    std::string reasoning;
    std::string content;
    std::vector<nlohmann::ordered_json> tool_calls;  // {"index","id","type","function":{name,arguments}}

    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

struct ChatParseOptions {
    ReasoningMode reasoning = ReasoningMode::model_opens;
    bool parse_tool_calls = false;  // tools given and tool_choice != "none"
    ToolCallFormat tool_format = ToolCallFormat::hermes;
    nlohmann::ordered_json tools;  // the request's tools (built-in tool names, parameter types)
};

class ChatDeltaParser {
  public:
    // Hermes calls and a model-opened <think>: what the server did before formats were chosen per model.
    explicit ChatDeltaParser(bool parse_tool_calls);
    explicit ChatDeltaParser(ChatParseOptions options);

    ChatDelta feed(const std::string& text);
    ChatDelta finish();  // flushes what was held back (an unterminated tag becomes plain text)
    int n_tool_calls() const { return m_n_calls; }

  private:
    void pass_content(const ReasoningDelta& r, bool final, ChatDelta& out);
    std::string new_call_id() const;

    ReasoningSplitter m_reasoning;
    bool m_tools;
    ToolCallFormat m_format;
    ToolCallParser m_calls;
    int m_n_calls = 0;
};

}  // namespace loradesk::server
