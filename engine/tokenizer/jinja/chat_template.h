// ChatTemplate: a model's chat template (tokenizer_config.json `chat_template`, a list of named
// templates, or chat_template.jinja) rendered the way transformers' apply_chat_template renders it,
// after normalising OpenAI-style messages the way an OpenAI-compatible server does (see render()).
// Immutable after loading; render() is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace loradesk::jinja {

class ChatTemplate {
  public:
    // Reads DIR/chat_template.jinja if present (it wins, as in transformers), else tokenizer_config.json's
    // chat_template (string or [{name, template}]), else chat_template.json. Special tokens come from
    // tokenizer_config.json. Throws ExpectedError when there is no template or it does not parse.
    static ChatTemplate from_model_dir(const std::string& dir);
    // A template from a Jinja file (vLLM's --chat-template), with the special tokens of model_dir's
    // tokenizer_config.json.
    static ChatTemplate from_file(const std::string& model_dir, const std::string& template_file);
    // `template_source` overrides the config's chat_template when non-empty.
    static ChatTemplate from_config(const nlohmann::json& tokenizer_config, const std::string& template_source = {});

    // Renders `messages` (OpenAI chat format). Normalisation before rendering:
    //  - role "developer" becomes "system";
    //  - content given as an array of parts becomes the text parts joined with "\n" (as vLLM does);
    //    non-text parts are rejected with a clear error;
    //  - assistant content null stays None (tool-call turns);
    //  - tool_calls[].function.arguments given as a JSON string is parsed to an object (as vLLM does), so
    //    templates that `tojson` the arguments print them once, not as an escaped string.
    // Variables passed as transformers passes them: messages, tools (None when `tools` is null),
    // documents (None), add_generation_prompt, the special tokens (bos_token, eos_token, ...), and every
    // member of `extra_kwargs` (e.g. enable_thinking) as a top-level variable.
    // ordered_json keeps object key order, which templates observe (tojson of tools, `for k in d`); the
    // nlohmann::json overload converts (its objects are already key-sorted).
    std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                       bool add_generation_prompt, const nlohmann::ordered_json& extra_kwargs) const;
    std::string render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                       const nlohmann::json& extra_kwargs) const;

    static nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages);

    bool has_tool_use_template() const { return m_tool_use != nullptr; }
    // The template text (the default and tool_use ones together when the config names both): the server
    // reads its markers to choose the tool-call and reasoning parsers.
    const std::string& source() const { return m_source; }

  private:
    std::shared_ptr<const Template> m_default;
    std::shared_ptr<const Template> m_tool_use;  // optional named "tool_use" template
    std::vector<std::pair<std::string, Value>> m_special_tokens;
    std::string m_source;
};

}  // namespace loradesk::jinja
