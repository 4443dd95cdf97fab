#include "hub/hub_id.h"

#include <cctype>

#include "core/error.h"

namespace loradesk::hub {

namespace {

bool id_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; }

std::optional<std::string> part_problem(std::string_view part, std::string_view what) {
    if (part.empty()) return std::string(what) + " is empty";
    for (char c : part)
        if (!id_char(c)) return std::string(what) + " may only hold A-Z a-z 0-9 . _ -";
    if (part.front() == '.' || part.front() == '-' || part.back() == '.' || part.back() == '-')
        return std::string(what) + " must not start or end with '.' or '-'";
    if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos)
        return std::string(what) + " must not contain '--' or '..'";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> revision_problem(std::string_view rev) {
    if (rev.empty()) return "the revision after '@' is empty";
    if (rev.size() > 256) return "the revision is longer than 256 characters";
    for (char c : rev)
        if (!id_char(c) && c != '/') return "the revision may only hold A-Z a-z 0-9 . _ - /";
    std::size_t start = 0;
    while (start <= rev.size()) {
        const std::size_t slash = std::min(rev.find('/', start), rev.size());
        const std::string_view seg = rev.substr(start, slash - start);
        if (seg.empty() || seg == "." || seg == "..")
            return "the revision must not have an empty, '.' or '..' part between slashes";
        start = slash + 1;
    }
    return std::nullopt;
}

std::optional<std::string> hub_id_problem(std::string_view text) {
    std::string_view repo = text;
    if (const auto at = text.find('@'); at != std::string_view::npos) {
        repo = text.substr(0, at);
        if (auto p = revision_problem(text.substr(at + 1))) return p;
    }
    const auto slash = repo.find('/');
    if (slash == std::string_view::npos) return "it has no '/' between organisation and name (org/name)";
    if (repo.find('/', slash + 1) != std::string_view::npos) return "it has more than one '/' (org/name)";
    if (repo.size() > 96) return "it is longer than 96 characters";
    if (auto p = part_problem(repo.substr(0, slash), "the organisation")) return p;
    if (auto p = part_problem(repo.substr(slash + 1), "the name")) return p;
    return std::nullopt;
}

std::optional<HubId> parse_hub_id(std::string_view text) {
    if (hub_id_problem(text)) return std::nullopt;
    HubId id;
    const auto at = text.find('@');
    id.repo = std::string(text.substr(0, at));
    if (at != std::string_view::npos) id.revision = std::string(text.substr(at + 1));
    return id;
}

HubId require_hub_id(std::string_view text) {
    if (auto p = hub_id_problem(text))
        throw_expected(ErrorCode::invalid_argument, "'" + std::string(text) + "' is not a Hugging Face Hub id: " + *p +
                                                        "; write it as org/name or org/name@revision");
    return *parse_hub_id(text);
}

bool is_commit_hash(std::string_view rev) {
    if (rev.size() != 40) return false;
    for (char c : rev)
        if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
    return true;
}

bool is_blob_hash(std::string_view etag) {
    if (etag.size() != 40 && etag.size() != 64) return false;
    for (char c : etag)
        if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
    return true;
}

std::optional<std::string> repo_file_problem(std::string_view path) {
    if (path.empty()) return "the file name is empty";
    if (path.size() > 1024) return "the file name is longer than 1024 characters";
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\')
            return "the file name holds a control character or a backslash";
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t slash = std::min(path.find('/', start), path.size());
        const std::string_view seg = path.substr(start, slash - start);
        if (seg.empty() || seg == "." || seg == "..")
            return "the file name has an empty, '.' or '..' part (absolute or escaping paths are refused)";
        start = slash + 1;
    }
    return std::nullopt;
}

std::string repo_folder_name(std::string_view repo) {
    std::string out = "models--";
    for (char c : repo) {
        if (c == '/')
            out += "--";
        else
            out += c;
    }
    return out;
}

std::string url_quote(std::string_view text, std::string_view safe) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || safe.find(c) != std::string_view::npos) {
            out += c;
        } else {
            out += '%';
            out += kHex[u >> 4];
            out += kHex[u & 15];
        }
    }
    return out;
}

}  // namespace loradesk::hub
