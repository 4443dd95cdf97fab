// Tool-call format names and detection from the chat template; see tool_call_format.h.
#include "server/tool_call_format.h"

#include <array>

namespace loradesk::server {

const char* const kToolCallParserNames = "auto, hermes, llama3_json, mistral, qwen3_coder";

namespace {

bool has(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

}  // namespace

bool is_tool_call_parser_name(std::string_view name) {
    constexpr std::array<std::string_view, 5> kNames = {"auto", "hermes", "llama3_json", "mistral", "qwen3_coder"};
    for (std::string_view n : kNames)
        if (n == name) return true;
    return false;
}

std::string_view tool_call_format_name(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::hermes:
            return "hermes";
        case ToolCallFormat::llama3_json:
            return "llama3_json";
        case ToolCallFormat::mistral:
        case ToolCallFormat::mistral_v11:
            return "mistral";
        case ToolCallFormat::qwen3_coder:
            return "qwen3_coder";
    }
    return "hermes";
}

ToolCallFormat detect_tool_call_format(std::string_view tmpl) {
    // Qwen3-Coder's template also writes <tool_call>, so its <function= is looked at first.
    if (has(tmpl, "<tool_call>") && has(tmpl, "<function=")) return ToolCallFormat::qwen3_coder;
    if (has(tmpl, "<tool_call>")) return ToolCallFormat::hermes;
    if (has(tmpl, "[TOOL_CALLS]")) return has(tmpl, "[ARGS]") ? ToolCallFormat::mistral_v11 : ToolCallFormat::mistral;
    // Llama 3.1 names <|python_tag|>; 3.2/3.3 only ask for {"name": ..., "parameters": ...} in the prompt.
    if (has(tmpl, "<|python_tag|>") || (has(tmpl, "<|start_header_id|>") && has(tmpl, "\"parameters\"")))
        return ToolCallFormat::llama3_json;
    return ToolCallFormat::hermes;
}

ToolCallFormat choose_tool_call_format(std::string_view parser_name, std::string_view chat_template) {
    if (parser_name == "hermes") return ToolCallFormat::hermes;
    if (parser_name == "llama3_json") return ToolCallFormat::llama3_json;
    if (parser_name == "qwen3_coder") return ToolCallFormat::qwen3_coder;
    if (parser_name == "mistral")
        return has(chat_template, "[ARGS]") ? ToolCallFormat::mistral_v11 : ToolCallFormat::mistral;
    return detect_tool_call_format(chat_template);
}

bool tool_call_markers_are_special(ToolCallFormat format) {
    return format == ToolCallFormat::llama3_json || format == ToolCallFormat::mistral ||
           format == ToolCallFormat::mistral_v11;
}

}  // namespace loradesk::server
