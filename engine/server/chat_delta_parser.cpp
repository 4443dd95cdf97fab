// Reasoning, content and tool-call deltas; see chat_delta_parser.h.
#include "server/chat_delta_parser.h"

#include <random>

#include "server/openai_format.h"

namespace loradesk::server {

namespace {

ChatParseOptions hermes_options(bool parse_tool_calls) {
    ChatParseOptions o;
    o.parse_tool_calls = parse_tool_calls;
    return o;
}

}  // namespace

ChatDeltaParser::ChatDeltaParser(bool parse_tool_calls) : ChatDeltaParser(hermes_options(parse_tool_calls)) {}

ChatDeltaParser::ChatDeltaParser(ChatParseOptions options)
    : m_reasoning(options.reasoning),
      m_tools(options.parse_tool_calls),
      m_format(options.tool_format),
      m_calls(options.tool_format, std::move(options.tools)) {}

ChatDelta ChatDeltaParser::feed(const std::string& text) {
    ReasoningDelta r;
    m_reasoning.feed(text, r);
    ChatDelta out;
    pass_content(r, false, out);
    return out;
}

ChatDelta ChatDeltaParser::finish() {
    ReasoningDelta r;
    m_reasoning.finish(r);
    ChatDelta out;
    pass_content(r, true, out);
    return out;
}

// Mistral's chat templates refuse tool call ids that are not 9 alphanumeric characters when the client sends
// the conversation back; every other family takes OpenAI's "call_…".
std::string ChatDeltaParser::new_call_id() const {
    if (m_format != ToolCallFormat::mistral && m_format != ToolCallFormat::mistral_v11) return new_response_id("call_");
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<int> pick(0, int(sizeof(kAlphabet)) - 2);
    std::string id;
    for (int i = 0; i < 9; ++i) id += kAlphabet[pick(rng)];
    return id;
}

void ChatDeltaParser::pass_content(const ReasoningDelta& r, bool final, ChatDelta& out) {
    out.reasoning = r.reasoning;
    if (!m_tools) {
        out.content = r.content;
        return;
    }
    ToolParseDelta t;
    m_calls.feed(r.content, t);
    if (final) m_calls.finish(t);
    out.content = std::move(t.content);
    for (ParsedToolCall& c : t.calls) {
        ojson entry;
        entry["index"] = m_n_calls++;
        entry["id"] = new_call_id();
        entry["type"] = "function";
        entry["function"] = ojson{{"name", std::move(c.name)}, {"arguments", std::move(c.arguments)}};
        out.tool_calls.push_back(std::move(entry));
    }
}

}  // namespace loradesk::server
