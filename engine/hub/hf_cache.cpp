#include "hub/hf_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace loradesk::hub {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string expand_home(const std::string& path) {
    if (path.rfind("~/", 0) != 0 && path != "~") return path;
    const std::string home = env("HOME");
    if (home.empty()) throw_expected(ErrorCode::invalid_argument, "'" + path + "' starts with ~ but HOME is not set");
    return home + path.substr(1);
}

bool inside(const fs::path& root, const fs::path& p) {
    auto [root_end, _] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
    return root_end == root.end();
}

const char* required_file(RepoContent content) {
    return content == RepoContent::model ? "config.json" : "adapter_config.json";
}

// Every entry of the snapshot resolves to something inside the cache (blobs may be symlinked by the user only
// as a whole cache, which canonicalising `root` covers).
void check_entries(const fs::path& snapshot, const fs::path& root, const HubId& id, RepoContent content) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path rel = fs::relative(it->path(), snapshot, ec);
        const fs::path real = fs::canonical(it->path(), ec);
        if (ec)
            throw_expected(ErrorCode::not_found,
                           fmt::format("'{}' of {} in the Hugging Face cache has no data (an interrupted download?): "
                                       "run `{}` again",
                                       rel.string(), id.text(), pull_command(id, content)));
        if (!inside(root, real))
            throw_expected(ErrorCode::invalid_argument,
                           fmt::format("'{}' of {} ({}) points outside the Hugging Face cache, to '{}'; refusing to "
                                       "read it",
                                       rel.string(), id.text(), snapshot.string(), real.string()));
    }
    if (ec)
        throw_expected(ErrorCode::io,
                       "cannot list '" + snapshot.string() + "' in the Hugging Face cache: " + ec.message());
}

}  // namespace

std::string hub_cache_dir() {
    if (auto v = env("HF_HUB_CACHE"); !v.empty()) return expand_home(v);
    if (auto v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return expand_home(v);
    if (auto v = env("HF_HOME"); !v.empty()) return expand_home(v) + "/hub";
    if (auto v = env("XDG_CACHE_HOME"); !v.empty()) return expand_home(v) + "/huggingface/hub";
    if (auto v = env("HOME"); !v.empty()) return v + "/.cache/huggingface/hub";
    throw_expected(ErrorCode::invalid_argument,
                   "cannot locate the Hugging Face cache: set HF_HUB_CACHE (or HF_HOME, or HOME)");
}

bool hub_offline() {
    std::string v = env("HF_HUB_OFFLINE");
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::optional<Snapshot> find_snapshot(const std::string& cache_dir, const HubId& id) {
    require_hub_id(id.text());  // a HubId built by hand gets the same checks before it becomes a path
    const fs::path repo = fs::path(cache_dir) / repo_folder_name(id.repo);
    const std::string rev = id.revision_or_main();
    Snapshot s;
    if (is_commit_hash(rev)) {
        s.commit = rev;
    } else {
        std::ifstream ref(repo / "refs" / rev);
        if (!ref) return std::nullopt;
        std::getline(ref, s.commit);
        while (!s.commit.empty() && std::isspace(static_cast<unsigned char>(s.commit.back()))) s.commit.pop_back();
        if (!is_commit_hash(s.commit))
            throw_expected(ErrorCode::corrupt_file, "the Hugging Face cache's ref '" + (repo / "refs" / rev).string() +
                                                        "' does not hold a commit hash; delete it and pull " +
                                                        id.text() + " again");
    }
    const fs::path snapshot = repo / "snapshots" / s.commit;
    std::error_code ec;
    if (!fs::is_directory(snapshot, ec)) return std::nullopt;
    s.path = snapshot.string();
    return s;
}

Snapshot resolve_snapshot(const std::string& cache_dir, const HubId& id, RepoContent content) {
    auto s = find_snapshot(cache_dir, id);
    if (!s)
        throw_expected(ErrorCode::not_found, id.text() + " is not in the Hugging Face cache (" + cache_dir + "): `" +
                                                 pull_command(id, content) + "` downloads it" +
                                                 (hub_offline() ? " (unset HF_HUB_OFFLINE first)" : ""));
    std::error_code ec;
    const fs::path root = fs::canonical(cache_dir, ec);
    if (ec) throw_expected(ErrorCode::io, "cannot read the Hugging Face cache '" + cache_dir + "': " + ec.message());
    const fs::path snapshot = fs::canonical(s->path, ec);
    if (ec || !inside(root, snapshot))
        throw_expected(ErrorCode::invalid_argument,
                       "the snapshot of " + id.text() + " points outside the Hugging Face cache; refusing to read it");
    check_entries(snapshot, root, id, content);
    if (!fs::is_regular_file(snapshot / required_file(content), ec))
        throw_expected(ErrorCode::not_found,
                       id.text() + " in the Hugging Face cache has no " + required_file(content) + " (" + s->path +
                           (content == RepoContent::model ? "; is it a model repository?" : "; is it a PEFT adapter?") +
                           " it may have been pulled with --include): `" + pull_command(id, content) +
                           "` fetches the rest");
    s->path = snapshot.string();
    return *s;
}

std::string resolve_reference(const std::string& text, RepoContent content, const std::string& cache_dir) {
    std::error_code ec;
    if (text.empty() || fs::exists(text, ec)) return text;
    const auto id = parse_hub_id(text);
    if (!id) return text;
    return resolve_snapshot(cache_dir.empty() ? hub_cache_dir() : cache_dir, *id, content).path;
}

std::string pull_command(const HubId& id, RepoContent content) {
    std::string cmd = "loradeskd pull " + id.repo;
    if (!id.revision.empty()) cmd += " --revision " + id.revision;
    if (content == RepoContent::adapter) cmd += " --adapter";
    return cmd;
}

}  // namespace loradesk::hub
