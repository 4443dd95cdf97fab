// tool_choice "required" or a named function, enforced: a GBNF grammar over the model family's own tool-call
// syntax (tool_call_syntax.h) whose arguments follow each tool's JSON Schema. The reply is then one or more calls
// and nothing else; the family's parser reads them back as OpenAI tool calls.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_call_syntax.h"

namespace loradesk::server {

struct ToolChoiceGrammar {
    std::string only;      // a named function: only it, exactly once; "" = any of the tools
    bool parallel = true;  // more than one call allowed (parallel_tool_calls); at most kMaxCalls
    static constexpr int kMaxCalls = 8;
};

// `tools`: the request's validated tools array. Throws ApiError 400 (param "tools") when a tool's parameters use
// a schema keyword that cannot be enforced, and (param "tool_choice") when `only` names no tool.
std::string tool_call_grammar(const ToolCallSyntax& syntax, const nlohmann::ordered_json& tools,
                              const ToolChoiceGrammar& choice);

}  // namespace loradesk::server
