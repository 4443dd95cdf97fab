// The call syntax of each tool-call format, as data, for whoever constrains generation to it (tool_choice
// "required" or a named function through a grammar): the text around one call, between calls and around
// all of them, and the form of the call itself. Describes what tool_call_parser.h reads; parses nothing.
// A reply with calls c1..cn reads: list_begin + (begin + c1 + end) + separator + ... + (begin + cn + end) + list_end.
#pragma once

#include <string>

#include "server/tool_call_format.h"

namespace loradesk::server {

struct ToolCallSyntax {
    enum class ArgsForm {
        json_object_name_arguments,   // {"name": "f", "arguments": {...}}
        json_object_name_parameters,  // {"name": "f", "parameters": {...}}
        mistral_v11,                  // f[ARGS]{...}
        qwen3_xml,                    // <function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>
    };
    std::string begin;       // before each call
    std::string end;         // after each call
    std::string separator;   // between two calls
    std::string list_begin;  // once before the calls (Mistral v0.3 "[TOOL_CALLS] [", Llama "<|python_tag|>")
    std::string list_end;    // once after them
    ArgsForm form = ArgsForm::json_object_name_arguments;
    bool list_begin_optional = false;  // Llama 3 also writes bare JSON without <|python_tag|>
};

ToolCallSyntax tool_call_syntax(ToolCallFormat format);

}  // namespace loradesk::server
