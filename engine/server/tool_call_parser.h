// Streaming tool-call extraction for one model family's syntax (tool_call_format.h): feed the content text as
// it is generated, get content and whole calls back. Holds back only what could still be the start of a
// call marker (or, for Llama 3, a reply that starts like a JSON call: it is a call only if all of it parses).
// A call that does not parse is the model's text and comes back as content; nothing is dropped and nothing
// throws. The streamed and non-streamed answers come from the same code, so they are equal for any chunking.
// Not thread-safe; one per choice.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call_blocks.h"
#include "server/tool_call_format.h"

namespace loradesk::server {

struct ToolParseDelta {
    std::string content;
    std::vector<ParsedToolCall> calls;
};

class ToolCallParser {
  public:
    // `tools`: the request's tools (names for Llama's built-in calls, schemas for Qwen3-Coder's value types).
    explicit ToolCallParser(ToolCallFormat format = ToolCallFormat::hermes, nlohmann::ordered_json tools = nullptr);

    void feed(std::string_view text, ToolParseDelta& out);
    void finish(ToolParseDelta& out);  // an unterminated call is content (or a call if it is complete JSON)

  private:
    enum class Block { need_more, call, not_a_call };
    struct BlockResult {
        Block kind = Block::need_more;
        std::size_t consumed = 0;  // bytes of m_pending the call (or the text that is not one) takes
        std::vector<ParsedToolCall> calls;
    };
    void step_blocks(ToolParseDelta& out, bool final);
    void step_llama3(ToolParseDelta& out, bool final);
    BlockResult tagged_block(bool final) const;   // <tool_call>…</tool_call> (hermes, qwen3_coder)
    BlockResult mistral_block(bool final) const;  // [TOOL_CALLS] in either Mistral form
    void emit_content(ToolParseDelta& out, std::size_t n);

    enum class Llama3 { undecided, maybe_calls, content };

    ToolCallFormat m_format;
    nlohmann::ordered_json m_tools;
    std::string m_pending;
    Llama3 m_llama3 = Llama3::undecided;
};

}  // namespace loradesk::server
