// Llama 3.x tool replies (declared in tool_call_blocks.h). The 3.1 template asks for a bare JSON object
// {"name": ..., "parameters": ...}; models also write several separated by ';', prefix <|python_tag|>, or
// use a built-in tool as Python: <|python_tag|>brave_search.call(query="..."). The reply is a call only when
// all of it parses; otherwise it is the model's text.
#include <cctype>
#include <cstdlib>

#include "server/tool_call_blocks.h"

namespace loradesk::server {

using ojson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

void skip_space(std::string_view& s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
}

bool is_ident(char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
}

std::string ident(std::string_view& s) {
    std::size_t n = 0;
    while (n < s.size() && is_ident(s[n], n == 0)) ++n;
    std::string out(s.substr(0, n));
    s.remove_prefix(n);
    return out;
}

// A Python literal as the built-in tool calls write them: a quoted string, a number, True/False/None.
std::optional<ojson> python_literal(std::string_view& s) {
    if (s.empty()) return std::nullopt;
    const char q = s.front();
    if (q == '"' || q == '\'') {
        std::string out;
        for (std::size_t i = 1; i < s.size(); ++i) {
            const char c = s[i];
            if (c == q) {
                s.remove_prefix(i + 1);
                return ojson(out);
            }
            if (c == '\\' && i + 1 < s.size()) {
                const char e = s[++i];
                out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            } else {
                out += c;
            }
        }
        return std::nullopt;
    }
    std::string word;
    while (!s.empty() && s.front() != ',' && s.front() != ')' && !std::isspace(static_cast<unsigned char>(s.front())))
        word += s.front(), s.remove_prefix(1);
    if (word == "True") return ojson(true);
    if (word == "False") return ojson(false);
    if (word == "None") return ojson(nullptr);
    ojson v = ojson::parse(word, nullptr, false);
    if (v.is_discarded() || !v.is_number()) return std::nullopt;
    return v;
}

// NAME.call(k=v, ...)
std::optional<ParsedToolCall> python_call(std::string_view s, const ojson& tools) {
    skip_space(s);
    std::string name = ident(s);
    constexpr std::string_view kCall = ".call(";
    if (name.empty() || s.substr(0, kCall.size()) != kCall || !offers_tool(tools, name)) return std::nullopt;
    s.remove_prefix(kCall.size());
    ojson args = ojson::object();
    for (;;) {
        skip_space(s);
        if (!s.empty() && s.front() == ')') break;
        std::string key = ident(s);
        skip_space(s);
        if (key.empty() || s.empty() || s.front() != '=') return std::nullopt;
        s.remove_prefix(1);
        skip_space(s);
        auto v = python_literal(s);
        if (!v) return std::nullopt;
        args[key] = std::move(*v);
        skip_space(s);
        if (!s.empty() && s.front() == ',')
            s.remove_prefix(1);
        else if (s.empty() || s.front() != ')')
            return std::nullopt;
    }
    s.remove_prefix(1);
    skip_space(s);
    if (!s.empty()) return std::nullopt;
    return ParsedToolCall{std::move(name), args.dump()};
}

}  // namespace

std::optional<std::vector<ParsedToolCall>> parse_llama3_reply(std::string_view reply, const ojson& tools) {
    std::string_view s = reply;
    skip_space(s);
    const bool tagged = s.substr(0, kPythonTag.size()) == kPythonTag;
    if (tagged) s.remove_prefix(kPythonTag.size());
    skip_space(s);
    if (s.empty()) return std::nullopt;
    if (s.front() != '{') {
        if (!tagged) return std::nullopt;
        auto call = python_call(s, tools);
        if (!call) return std::nullopt;
        return std::vector<ParsedToolCall>{std::move(*call)};
    }
    std::vector<ParsedToolCall> calls;
    while (!s.empty()) {
        const std::size_t end = json_value_end(s, 0);
        if (end == kJsonIncomplete || end == kNotJson) return std::nullopt;
        auto call = parse_json_call(s.substr(0, end), true);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
        s.remove_prefix(end);
        skip_space(s);
        if (s.empty()) break;
        if (s.front() != ';') return std::nullopt;
        s.remove_prefix(1);
        skip_space(s);
    }
    return calls;
}

}  // namespace loradesk::server
