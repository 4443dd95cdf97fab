// Streaming tool-call extraction; see tool_call_parser.h.
#include "server/tool_call_parser.h"

#include <algorithm>
#include <cctype>

#include "server/marker_scan.h"

namespace loradesk::server {

namespace {

constexpr std::string_view kToolOpen = "<tool_call>", kToolClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]", kMistralArgs = "[ARGS]", kMistralCallId = "[CALL_ID]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// A tagged block's body is JSON (Hermes) or Qwen3-Coder's XML form; either is accepted in either format, as
// fine-tunes of one family sometimes write the other's.
std::optional<ParsedToolCall> parse_tagged_body(std::string_view body, const nlohmann::ordered_json& tools) {
    const std::string_view s = body.substr(leading_space(body));
    if (starts_with(s, "<function=")) return parse_qwen3_coder_call(s, tools);
    return parse_json_call(s, true);
}

// Characters of a function name (Mistral v11 writes it bare); anything else means this is not a call.
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

}  // namespace

ToolCallParser::ToolCallParser(ToolCallFormat format, nlohmann::ordered_json tools)
    : m_format(format), m_tools(std::move(tools)) {}

void ToolCallParser::feed(std::string_view text, ToolParseDelta& out) {
    m_pending += text;
    if (m_format == ToolCallFormat::llama3_json)
        step_llama3(out, false);
    else
        step_blocks(out, false);
}

void ToolCallParser::finish(ToolParseDelta& out) {
    if (m_format == ToolCallFormat::llama3_json)
        step_llama3(out, true);
    else
        step_blocks(out, true);
    emit_content(out, m_pending.size());
}

void ToolCallParser::emit_content(ToolParseDelta& out, std::size_t n) {
    out.content.append(m_pending, 0, n);
    m_pending.erase(0, n);
}

void ToolCallParser::step_blocks(ToolParseDelta& out, bool final) {
    const bool mistral = m_format == ToolCallFormat::mistral || m_format == ToolCallFormat::mistral_v11;
    const std::string_view open = mistral ? kMistralCalls : kToolOpen;
    while (!m_pending.empty()) {
        const std::size_t at = m_pending.find(open);
        if (at == std::string::npos) {
            emit_content(out, m_pending.size() - (final ? 0 : partial_marker_suffix(m_pending, open)));
            return;
        }
        emit_content(out, at);
        BlockResult r = mistral ? mistral_block(final) : tagged_block(final);
        if (r.kind == Block::need_more) return;
        if (r.kind == Block::call) {
            for (ParsedToolCall& c : r.calls) out.calls.push_back(std::move(c));
            m_pending.erase(0, r.consumed);
        } else {
            emit_content(out, r.consumed);  // not a usable call: the model's text stands
        }
    }
}

ToolCallParser::BlockResult ToolCallParser::tagged_block(bool final) const {
    const std::size_t close = m_pending.find(kToolClose, kToolOpen.size());
    std::string_view body = std::string_view(m_pending).substr(kToolOpen.size());
    std::size_t consumed = m_pending.size();
    if (close != std::string::npos) {
        body = body.substr(0, close - kToolOpen.size());
        consumed = close + kToolClose.size();
    } else if (!final) {
        return {};
    }
    // At the end, a block the model left open is still a call when its body is complete.
    if (auto call = parse_tagged_body(body, m_tools)) return {Block::call, consumed, {std::move(*call)}};
    return {Block::not_a_call, consumed, {}};
}

ToolCallParser::BlockResult ToolCallParser::mistral_block(bool final) const {
    const std::string_view s = m_pending;
    const BlockResult wait = final ? BlockResult{Block::not_a_call, s.size(), {}} : BlockResult{};
    const BlockResult marker_only{Block::not_a_call, kMistralCalls.size(), {}};
    std::size_t p = kMistralCalls.size();
    p += leading_space(s.substr(p));
    if (p == s.size()) return wait;
    if (s[p] == '[' || s[p] == '{') {  // pre-v11: a JSON list of calls
        const std::size_t end = json_value_end(s, p);
        if (end == kJsonIncomplete) return wait;
        if (end == kNotJson) return marker_only;
        if (auto calls = parse_json_call_list(s.substr(p, end - p))) return {Block::call, end, std::move(*calls)};
        return {Block::not_a_call, end, {}};
    }
    // v11+: NAME[ARGS]{...}, or NAME[CALL_ID]ID[ARGS]{...} (later Mistral tokenizers).
    const std::size_t args = s.find(kMistralArgs, p);
    std::string_view head = s.substr(p, (args == std::string_view::npos ? s.size() : args) - p);
    if (args == std::string_view::npos)  // the end may still become [ARGS] or [CALL_ID]
        head.remove_suffix(
            std::max(partial_marker_suffix(head, kMistralArgs), partial_marker_suffix(head, kMistralCallId)));
    const std::size_t id_at = head.find(kMistralCallId);
    const std::string_view name = head.substr(0, id_at);
    const std::string_view id =
        id_at == std::string_view::npos ? std::string_view() : head.substr(id_at + kMistralCallId.size());
    for (std::string_view part : {name, id})
        for (char c : part)
            if (!name_char(c)) return marker_only;
    if (args == std::string_view::npos) return wait;
    if (name.empty()) return marker_only;
    std::size_t q = args + kMistralArgs.size();
    q += leading_space(s.substr(q));
    if (q == s.size()) return wait;
    const std::size_t end = json_value_end(s, q);
    if (end == kJsonIncomplete) return wait;
    if (end == kNotJson) return {Block::not_a_call, q, {}};
    if (auto a = parse_json_arguments(s.substr(q, end - q)))
        return {Block::call, end, {ParsedToolCall{std::string(name), std::move(*a)}}};
    return {Block::not_a_call, end, {}};
}

void ToolCallParser::step_llama3(ToolParseDelta& out, bool final) {
    if (m_llama3 == Llama3::undecided) {
        // Llama writes a call as its whole reply, so only a reply that starts like one is considered.
        const std::string_view rest = std::string_view(m_pending).substr(leading_space(m_pending));
        if (rest.empty() && !final) return;
        if (starts_with(rest, "{") || starts_with(rest, kPythonTag))
            m_llama3 = Llama3::maybe_calls;
        else if (!final && !rest.empty() && starts_with(kPythonTag, rest))
            return;
        else
            m_llama3 = Llama3::content;
    }
    if (m_llama3 == Llama3::maybe_calls) {
        if (final) {
            if (auto calls = parse_llama3_reply(m_pending, m_tools)) {
                for (ParsedToolCall& c : *calls) out.calls.push_back(std::move(c));
                m_pending.clear();
            }
            return;  // finish() emits what is left as content
        }
        // A first object that is complete and not a call shows the reply is text (a JSON answer): stop
        // holding it back.
        std::string_view s = std::string_view(m_pending).substr(leading_space(m_pending));
        if (starts_with(s, kPythonTag)) s.remove_prefix(kPythonTag.size());
        s.remove_prefix(leading_space(s));
        if (!starts_with(s, "{")) return;
        const std::size_t end = json_value_end(s, 0);
        if (end == kJsonIncomplete) return;
        if (end != kNotJson && parse_json_call(s.substr(0, end), true)) {
            const std::string_view after = s.substr(end + leading_space(s.substr(end)));
            if (after.empty() || after.front() == ';') return;
        }
        m_llama3 = Llama3::content;
    }
    emit_content(out, m_pending.size());
}

}  // namespace loradesk::server
