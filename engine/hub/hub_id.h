// Hugging Face Hub ids as loradesk accepts them: `org/name[@revision]`, checked so that an id can name a
// folder of the cache and a URL path without ever leaving either (no `..`, no absolute paths, no `--`).
// Also the checks for the names the Hub gives back (file paths in a repo, commit hashes, etags) before
// any of them becomes a path. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loradesk::hub {

struct HubId {
    std::string repo;      // "org/name"
    std::string revision;  // branch, tag or 40-hex commit; empty = "main"

    std::string revision_or_main() const { return revision.empty() ? std::string("main") : revision; }
    std::string text() const { return revision.empty() ? repo : repo + "@" + revision; }
};

// Why `text` is not an `org/name[@revision]` id, or nullopt when it is one. The rules are huggingface_hub's
// (validate_repo_id): each part [A-Za-z0-9._-], at most 96 characters in all, no leading or trailing '.'
// or '-', no "--" or "..". Revisions: [A-Za-z0-9._/-], no empty, '.' or '..' segment, at most 256.
std::optional<std::string> hub_id_problem(std::string_view text);
// The id, or nullopt when `text` is not one (a folder path, say).
std::optional<HubId> parse_hub_id(std::string_view text);
// The id; throws ExpectedError(invalid_argument) "'<text>' is not a Hugging Face Hub id: <why>; ...".
HubId require_hub_id(std::string_view text);

std::optional<std::string> revision_problem(std::string_view revision);
// A full commit hash (40 lowercase hex digits), the form snapshots/ folders are named by.
bool is_commit_hash(std::string_view revision);
// A blob name: a git blob sha1 (40 hex) or an LFS sha256 (64 hex), lowercase.
bool is_blob_hash(std::string_view etag);
// Why a file path from a repo listing cannot become a path under snapshots/<commit>/ ("a/b.safetensors" is
// fine; "", "/x", "a/../b", "a//b", "a\\b", control bytes are not), or nullopt.
std::optional<std::string> repo_file_problem(std::string_view path);

// "models--org--name": the repo's folder in the cache.
std::string repo_folder_name(std::string_view repo);
// `text` with every byte outside [A-Za-z0-9._~-] %-encoded (revisions in URLs: "refs/pr/1" -> "refs%2Fpr%2F1").
std::string url_quote(std::string_view text, std::string_view safe = {});

}  // namespace loradesk::hub
