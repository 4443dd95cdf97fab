// <think>…</think> splitting; see reasoning_splitter.h.
#include "server/reasoning_splitter.h"

#include "server/marker_scan.h"

namespace loradesk::server {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

}  // namespace

TemplateReasoning template_reasoning(std::string_view chat_template) {
    if (chat_template.empty()) return TemplateReasoning::unknown;
    return chat_template.find(kThinkOpen) == std::string_view::npos ? TemplateReasoning::none
                                                                    : TemplateReasoning::think;
}

ReasoningMode reasoning_mode(TemplateReasoning support, std::string_view prompt_tail) {
    if (support == TemplateReasoning::unknown) return ReasoningMode::model_opens;
    if (support == TemplateReasoning::none) return ReasoningMode::none;
    const auto last = prompt_tail.find_last_not_of(" \t\r\n");
    if (last != std::string_view::npos && last + 1 >= kThinkOpen.size() &&
        prompt_tail.substr(last + 1 - kThinkOpen.size(), kThinkOpen.size()) == kThinkOpen)
        return ReasoningMode::prompt_opened;
    return ReasoningMode::model_opens;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMode mode)
    : m_state(mode == ReasoningMode::none            ? State::content
              : mode == ReasoningMode::prompt_opened ? State::reasoning_start
                                                     : State::start) {}

void ReasoningSplitter::feed(std::string_view text, ReasoningDelta& out) {
    m_pending += text;
    step(out, false);
}

void ReasoningSplitter::finish(ReasoningDelta& out) {
    step(out, true);
    if (m_pending.empty()) return;
    (m_state == State::reasoning || m_state == State::reasoning_start ? out.reasoning : out.content) += m_pending;
    m_pending.clear();
}

void ReasoningSplitter::step(ReasoningDelta& out, bool final) {
    while (!m_pending.empty()) {
        if (m_state == State::start) {
            const std::size_t ws = leading_space(m_pending);
            const std::string_view rest = std::string_view(m_pending).substr(ws);
            if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
                m_pending.erase(0, ws + kThinkOpen.size());
                m_state = State::reasoning_start;
            } else if (!final && kThinkOpen.substr(0, rest.size()) == rest) {
                return;  // still could be "<think>"
            } else {
                m_state = State::content;
            }
        } else if (m_state == State::reasoning_start) {
            m_pending.erase(0, leading_space(m_pending));  // the newline after <think> is not reasoning
            if (m_pending.empty()) return;
            m_state = State::reasoning;
        } else if (m_state == State::reasoning) {
            const std::size_t close = m_pending.find(kThinkClose);
            if (close == std::string::npos) {
                const std::size_t n = m_pending.size() - (final ? 0 : partial_marker_suffix(m_pending, kThinkClose));
                out.reasoning.append(m_pending, 0, n);
                m_pending.erase(0, n);
                return;
            }
            out.reasoning.append(m_pending, 0, close);
            m_pending.erase(0, close + kThinkClose.size());
            m_state = State::after_reasoning;
        } else if (m_state == State::after_reasoning) {
            // The template separates reasoning from the answer with blank lines; they are not content.
            m_pending.erase(0, leading_space(m_pending));
            if (m_pending.empty()) return;
            m_state = State::content;
        } else {
            out.content += m_pending;
            m_pending.clear();
        }
    }
}

}  // namespace loradesk::server
