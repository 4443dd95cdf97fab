// Which tool-call syntax a model family writes, and how it is chosen: from the chat template's text (the
// markers its tool turns render) or from `--tool-call-parser`. Pure functions; no parsing of model output
// here (tool_call_parser.h does that).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loradesk::server {

enum class ToolCallFormat {
    hermes,       // Qwen2.5/Qwen3, Hermes: <tool_call>\n{"name", "arguments"}\n</tool_call>
    llama3_json,  // Llama 3.1-3.3: the reply is {"name", "parameters"} (";"-separated), or <|python_tag|>
    mistral,      // pre-v11: [TOOL_CALLS] [{"name", "arguments"}, ...]
    mistral_v11,  // v11+: [TOOL_CALLS]name[ARGS]{...}; the parser reads both Mistral forms either way
    qwen3_coder,  // <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>...</function>\n</tool_call>
};

// The names `--tool-call-parser` accepts, for messages: "auto, hermes, llama3_json, mistral, qwen3_coder".
extern const char* const kToolCallParserNames;

bool is_tool_call_parser_name(std::string_view name);
std::string_view tool_call_format_name(ToolCallFormat format);  // mistral_v11 reads "mistral"

// Detects the format from the chat template's text: <tool_call> with <function= is qwen3_coder, <tool_call>
// hermes, [TOOL_CALLS] mistral (v11 when the template writes [ARGS]), <|python_tag|> or a Llama 3 header
// with "parameters" llama3_json; anything else hermes (the most common syntax of open models).
ToolCallFormat detect_tool_call_format(std::string_view chat_template);

// `parser_name` is one of kToolCallParserNames ("auto" detects; "mistral" still reads the template for the
// v11 form, which only matters to the grammar of tool_call_syntax.h).
ToolCallFormat choose_tool_call_format(std::string_view parser_name, std::string_view chat_template);

// Formats whose markers are special tokens ([TOOL_CALLS], [ARGS], <|python_tag|>): a tool request must be
// detokenized with skip_special_tokens=false or the markers never reach the parser (vLLM does the same for
// Mistral). Qwen's <tool_call> is an added token that is not special, so it survives either way.
bool tool_call_markers_are_special(ToolCallFormat format);

}  // namespace loradesk::server
