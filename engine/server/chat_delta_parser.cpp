// Incremental reasoning / content / tool-call splitting; see chat_delta_parser.h.
#include "server/chat_delta_parser.h"

#include <algorithm>

#include "server/openai_format.h"

namespace loradesk::server {

namespace {

const std::string kThinkOpen = "<think>", kThinkClose = "</think>";
const std::string kToolOpen = "<tool_call>", kToolClose = "</tool_call>";

// Length of the longest suffix of `text` that is a proper prefix of `tag` (it may still become the tag).
std::size_t partial_tag_suffix(const std::string& text, const std::string& tag) {
    for (std::size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
        if (text.compare(text.size() - n, n, tag, 0, n) == 0) return n;
    return 0;
}

std::size_t leading_space(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    return b == std::string::npos ? s.size() : b;
}

}  // namespace

ChatDelta ChatDeltaParser::feed(const std::string& text) {
    m_pending += text;
    ChatDelta out;
    step(out, false);
    return out;
}

ChatDelta ChatDeltaParser::finish() {
    ChatDelta out;
    step(out, true);
    if (!m_pending.empty()) {
        (m_mode == Mode::reasoning || m_mode == Mode::reasoning_start ? out.reasoning : out.content) += m_pending;
        m_pending.clear();
    }
    return out;
}

void ChatDeltaParser::emit_content(ChatDelta& out, std::size_t n) {
    out.content += m_pending.substr(0, n);
    m_pending.erase(0, n);
}

void ChatDeltaParser::step(ChatDelta& out, bool final) {
    while (!m_pending.empty()) {
        if (m_mode == Mode::start) {
            const std::size_t ws = leading_space(m_pending);
            const std::string rest = m_pending.substr(ws);
            if (rest.rfind(kThinkOpen, 0) == 0) {
                m_pending = rest.substr(kThinkOpen.size());
                m_mode = Mode::reasoning_start;
            } else if (!final && kThinkOpen.rfind(rest, 0) == 0) {
                return;  // still could be "<think>"
            } else {
                m_mode = Mode::content;
            }
        } else if (m_mode == Mode::reasoning_start) {
            m_pending.erase(0, leading_space(m_pending));  // the newline after <think> is not reasoning
            if (m_pending.empty()) return;
            m_mode = Mode::reasoning;
        } else if (m_mode == Mode::reasoning) {
            const std::size_t close = m_pending.find(kThinkClose);
            if (close == std::string::npos) {
                const std::size_t keep = final ? 0 : partial_tag_suffix(m_pending, kThinkClose);
                out.reasoning += m_pending.substr(0, m_pending.size() - keep);
                m_pending.erase(0, m_pending.size() - keep);
                return;
            }
            out.reasoning += m_pending.substr(0, close);
            m_pending.erase(0, close + kThinkClose.size());
            m_mode = Mode::after_reasoning;
        } else if (m_mode == Mode::after_reasoning) {
            // The template separates reasoning from the answer with blank lines; they are not content.
            const std::size_t ws = leading_space(m_pending);
            m_pending.erase(0, ws);
            if (m_pending.empty()) return;
            m_mode = Mode::content;
        } else {
            if (!m_tools) {
                emit_content(out, m_pending.size());
                return;
            }
            const std::size_t open = m_pending.find(kToolOpen);
            if (open == std::string::npos) {
                emit_content(out, m_pending.size() - (final ? 0 : partial_tag_suffix(m_pending, kToolOpen)));
                return;
            }
            emit_content(out, open);
            const std::size_t close = m_pending.find(kToolClose, kToolOpen.size());
            if (close == std::string::npos) {
                if (final) emit_content(out, m_pending.size());
                return;
            }
            const std::string inner = m_pending.substr(kToolOpen.size(), close - kToolOpen.size());
            const nlohmann::json call = nlohmann::json::parse(inner, nullptr, false);
            if (call.is_object() && call.contains("name") && call["name"].is_string()) {
                const nlohmann::json args = call.contains("arguments") ? call["arguments"] : nlohmann::json::object();
                ojson entry;
                entry["index"] = m_n_calls++;
                entry["id"] = new_response_id("call_");
                entry["type"] = "function";
                entry["function"] = ojson{{"name", call["name"].get<std::string>()},
                                          {"arguments", args.is_string() ? args.get<std::string>() : args.dump()}};
                out.tool_calls.push_back(std::move(entry));
                m_pending.erase(0, close + kToolClose.size());
            } else {
                emit_content(out, close + kToolClose.size());  // not a usable call: the model's text stands
            }
        }
    }
}

}  // namespace loradesk::server
