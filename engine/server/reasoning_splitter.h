// Splits streamed chat text into reasoning (`<think>…</think>`) and the rest, for model families whose
// template has a reasoning format. Where the reasoning starts is decided from the rendered prompt, not
// guessed: Qwen3 thinking releases and R1 distills end the generation prompt with "<think>\n", so their
// output starts inside the reasoning. Not thread-safe; one per choice.
#pragma once

#include <string>
#include <string_view>

namespace loradesk::server {

enum class ReasoningMode {
    none,           // the template has no reasoning format: everything is content
    model_opens,    // the model may open <think> at the very start of its reply
    prompt_opened,  // the prompt ends inside <think>: output is reasoning until </think>
};

// What the chat template says about reasoning: it writes <think> (a reasoning family), or not, or there is no
// template text to read (an engine that does not say).
enum class TemplateReasoning { unknown, none, think };
TemplateReasoning template_reasoning(std::string_view chat_template);

// From the template and the rendered prompt's tail. An unknown template keeps the older behaviour,
// model_opens. enable_thinking=false renders "<think>\n\n</think>\n\n", whose tail is closed, so the reply is
// content (unless the model opens a block itself).
ReasoningMode reasoning_mode(TemplateReasoning support, std::string_view prompt_tail);

struct ReasoningDelta {
    std::string reasoning;
    std::string content;
};

class ReasoningSplitter {
  public:
    explicit ReasoningSplitter(ReasoningMode mode = ReasoningMode::model_opens);

    void feed(std::string_view text, ReasoningDelta& out);
    void finish(ReasoningDelta& out);  // flushes what was held back (an unterminated block stays reasoning)

  private:
    enum class State { start, reasoning_start, reasoning, after_reasoning, content };
    void step(ReasoningDelta& out, bool final);

    State m_state;
    std::string m_pending;
};

}  // namespace loradesk::server
