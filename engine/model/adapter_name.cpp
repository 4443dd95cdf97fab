// Adapter name rules and their printable form; see adapter_name.h.
#include "model/adapter_name.h"

#include <cstdio>

#include "core/error.h"

namespace loradesk::model {
namespace {

bool allowed_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '-';
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

void append_hex(std::string& out, unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
}

}  // namespace

std::optional<std::string> adapter_name_problem(std::string_view name, std::string_view base_model_id) {
    if (name.empty()) return "it is empty";
    if (name.size() > kMaxAdapterNameLength)
        return "it has " + std::to_string(name.size()) + " characters, more than " +
               std::to_string(kMaxAdapterNameLength);
    for (char c : name)
        if (!allowed_char(c)) return "it contains the character '" + printable_name(std::string_view(&c, 1)) + "'";
    if (name == "." || name == "..") return "it is a path component";
    if (name == "base") return "'base' selects the base model";
    if (!base_model_id.empty() && name == base_model_id) return "it is the base model's id";
    if (starts_with(name, "base:") || (!base_model_id.empty() && starts_with(name, std::string(base_model_id) + ":"))) {
        std::string problem(name.substr(0, name.find(':') + 1));
        problem.append("ADAPTER selects an adapter of the base model, so this name could not be reached");
        return problem;
    }
    return std::nullopt;
}

void check_adapter_name(std::string_view name, std::string_view base_model_id, std::string_view what) {
    if (auto problem = adapter_name_problem(name, base_model_id))
        throw_expected(ErrorCode::invalid_argument, std::string(what) + " '" + printable_name(name) +
                                                        "' is not allowed: " + *problem + "; use " +
                                                        std::string(kAdapterNameRule));
}

std::string printable_name(std::string_view name) {
    constexpr std::size_t kMax = 80;
    std::string out;
    for (std::size_t i = 0; i < name.size() && i < kMax; ++i) {
        unsigned char c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c >= 0x7f || c == '\'' || c == '"' || c == '\\') {
            append_hex(out, c);
        } else {
            out += char(c);
        }
    }
    if (name.size() > kMax) out += "...";
    return out;
}

std::string printable_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char ch : text) {
        unsigned char c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            append_hex(out, c);
        } else {
            out += ch;
        }
    }
    return out;
}

}  // namespace loradesk::model
