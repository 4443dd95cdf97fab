// `loradeskd pull`'s engine: downloads a Hub repository revision into the Hugging Face cache exactly as
// huggingface_hub does (blobs/<etag>, snapshots/<commit>/<path> -> ../../blobs/<etag>, refs/<revision>), so
// transformers and vLLM find the files too. Several files at once, each resumed from blobs/<etag>.incomplete
// with a Range request, verified (sha256 for LFS files, the git blob sha1 otherwise) and renamed into place
// only then: an interrupted or failed download never leaves a file that looks complete. Concurrent pulls of
// the same blob (from loradesk or huggingface_hub) are serialised by .locks/<repo>/<etag>.lock.
// pull() blocks; progress and cancel make it usable from a UI thread's worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/download/hub_api.h"
#include "hub/hub_id.h"

namespace loradesk::hub {

struct PullFileState {
    std::string path;
    int64_t size = -1;  // -1 while unknown
    int64_t done = 0;   // bytes on disk (resumed bytes included)
    enum class Stage { waiting, downloading, verifying, done, cached, failed } stage = Stage::waiting;
    std::string error;  // stage == failed
};

struct PullProgress {
    std::string repo, commit;
    int64_t bytes_total = 0;  // of the selected files, as the Hub listed them
    int64_t bytes_done = 0;   // on disk, cached files included
    int files_total = 0, files_done = 0;
    std::vector<PullFileState> files;  // in listing order
};

struct PullOptions {
    HubConfig hub = HubConfig::from_environment();
    std::string cache_dir;              // empty = hub_cache_dir()
    std::vector<std::string> includes;  // fnmatch globs over repo paths, as huggingface_hub's allow_patterns
    int workers = 8;                    // files downloaded at once
    int retries = 3;                    // per file, after a dropped connection (each resumes where it stopped)
    // Called from pull()'s reporter thread every `progress_interval_ms`, and from pull()'s caller once at the end
    // with the final state; one call at a time.
    std::function<void(const PullProgress&)> on_progress;
    int progress_interval_ms = 200;
    // Called as each file finishes (downloaded, found in the cache, or failed), one call at a time.
    std::function<void(const PullFileState&)> on_file;
    const std::atomic<bool>* cancel = nullptr;  // set it to stop: pull() then throws ExpectedError(cancelled)
};

struct PullResult {
    std::string repo, commit;
    std::string snapshot;  // <cache>/models--org--name/snapshots/<commit>
    int files_downloaded = 0, files_cached = 0;
    int64_t bytes_downloaded = 0;
    bool offline = false;  // HF_HUB_OFFLINE: answered from the cache without the network
};

// Throws ExpectedError with what to do: gated/private repositories, unknown revisions, no file matching the
// includes, checksum mismatches, files that failed after their retries (listed; pulling again resumes them).
// With HF_HUB_OFFLINE set, answers from the cache or fails saying to unset it.
PullResult pull(const HubId& id, const PullOptions& options);

// The repo paths `includes` select (all when empty); a pattern ending in '/' selects the folder's files.
bool path_included(const std::string& path, const std::vector<std::string>& includes);

// The git blob id of a file: sha1("blob <size>\0" + bytes), the ETag the Hub gives files kept in git itself.
std::string git_blob_sha1_of_file(const std::string& path);
std::string sha256_of_file(const std::string& path);

}  // namespace loradesk::hub
