// Per-format call syntax for grammars; see tool_call_syntax.h. The strings are what each family's chat
// template renders for an assistant tool-call turn, so a constrained model writes what it was trained on.
#include "server/tool_call_syntax.h"

namespace loradesk::server {

ToolCallSyntax tool_call_syntax(ToolCallFormat format) {
    using Form = ToolCallSyntax::ArgsForm;
    ToolCallSyntax s;
    switch (format) {
        case ToolCallFormat::hermes:
        case ToolCallFormat::qwen3_coder:
            s.begin = "<tool_call>\n";
            s.end = "\n</tool_call>";
            s.separator = "\n";
            s.form = format == ToolCallFormat::hermes ? Form::json_object_name_arguments : Form::qwen3_xml;
            break;
        case ToolCallFormat::llama3_json:
            s.separator = "; ";
            s.list_begin = "<|python_tag|>";
            s.list_begin_optional = true;
            s.form = Form::json_object_name_parameters;
            break;
        case ToolCallFormat::mistral:
            s.separator = ", ";
            s.list_begin = "[TOOL_CALLS] [";
            s.list_end = "]";
            s.form = Form::json_object_name_arguments;
            break;
        case ToolCallFormat::mistral_v11:
            s.begin = "[TOOL_CALLS]";
            s.form = Form::mistral_v11;
            break;
    }
    return s;
}

}  // namespace loradesk::server
