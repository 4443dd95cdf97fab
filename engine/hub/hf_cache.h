// The Hugging Face cache as huggingface_hub lays it out, read without any network:
//   <cache>/models--org--name/refs/<revision>           the commit a branch or tag points to
//   <cache>/models--org--name/snapshots/<commit>/<path>  symlinks to ../../blobs/<etag> (or plain copies)
//   <cache>/models--org--name/blobs/<etag>               the bytes
// It resolves `org/name[@revision]` to a snapshot folder that the engine reads like any model or adapter
// folder, and never touches a file outside the cache: a snapshot whose entries resolve elsewhere is refused.
// Writing the cache is hub/download's job. Pure filesystem; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "hub/hub_id.h"

namespace loradesk::hub {

// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
// (huggingface_hub's order; "~/" is expanded). Throws ExpectedError(invalid_argument) when none can be formed.
std::string hub_cache_dir();
// $HF_HUB_OFFLINE is 1, true, yes or on: nothing may touch the network.
bool hub_offline();

// What a snapshot must hold to be used as: a model (config.json) or a PEFT adapter (adapter_config.json).
enum class RepoContent { model, adapter };

struct Snapshot {
    std::string path;    // <cache>/models--org--name/snapshots/<commit>
    std::string commit;  // 40 hex
};

// The snapshot of `id` in the cache, or nullopt when the revision's ref or snapshot folder is missing.
// A branch or tag goes through refs/<revision>; a 40-hex revision names snapshots/<commit> directly.
// Throws ExpectedError(corrupt_file) when a ref does not hold a commit hash.
std::optional<Snapshot> find_snapshot(const std::string& cache_dir, const HubId& id);

// find_snapshot, checked for use: the snapshot exists (else ExpectedError(not_found) saying that
// `loradeskd pull ID` downloads it), holds the file `content` needs, and every entry resolves to a file
// inside the cache (a dangling link -> "interrupted download, pull again"; a link leaving the cache ->
// ExpectedError(invalid_argument)).
Snapshot resolve_snapshot(const std::string& cache_dir, const HubId& id, RepoContent content);

// What --model, --adapter and load_lora_adapter accept: an existing path is returned unchanged (folders keep
// working exactly as before, and win over an id of the same spelling); an `org/name[@revision]` id resolves
// from the cache (resolve_snapshot); anything else is returned unchanged for the caller's own "no such
// folder" error. `cache_dir` empty = hub_cache_dir().
std::string resolve_reference(const std::string& text, RepoContent content, const std::string& cache_dir = {});

// The command that fetches `id` into the cache, as error messages quote it: "loradeskd pull org/name[ --revision R]".
std::string pull_command(const HubId& id, RepoContent content);

}  // namespace loradesk::hub
