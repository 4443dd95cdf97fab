// How adapter folders become served adapters: name rules, confinement to the --adapters roots, the
// catalog's folder digest cache (a folder whose files still match their signature is not read again),
// synchronous registration (the load API, the folder watch) and background registration (startup:
// the name is served at once and its folder hashed by the AdapterHasher; requests wait for it).
// Functions over one EngineCore; thread-safe as its parts are.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lora/adapter_registry.h"

namespace loradesk::api {

struct EngineCore;

// Validates an adapter name or alias against the rules and the served base model's id.
void check_served_name(const EngineCore& core, const std::string& name, const char* what = "adapter name");

// The real paths of the roots that exist (symlinks and ".." resolved), for confined_folder.
std::vector<std::string> canonical_roots(const std::vector<std::string>& roots);
// The folder's real path when it lies inside one of `roots` (from canonical_roots), as the load API
// requires; ExpectedError(invalid_argument) naming the roots otherwise (a symlink out of them).
std::string confined_folder(const std::string& dir, const std::vector<std::string>& roots);

// Registers one adapter folder under `name` now: cached digest or a full read, checked against the
// base model; the catalog records it. `dir` must be canonical. With `list_rejection` (folder scans) a
// folder that cannot be served is listed in core.rejected with the reason (and in the catalog when
// its content could be read); the load API reports it to its caller only. Throws ExpectedError.
lora::RegisteredAdapter register_adapter_folder(EngineCore& core, const std::string& name, const std::string& dir,
                                                lora::OnTaken on_taken, bool list_rejection);

// "adapter 'x' is not served: <reason>": what requests for a listed, unservable adapter are told.
std::string not_served_message(const std::string& name, const std::string& reason);

// Lists `name` (folder `dir`) as not servable with `reason`, replacing an earlier entry for the folder.
void list_rejected(EngineCore& core, const std::string& name, const std::string& dir, const std::string& reason);

// Registers the adapters of core.options (--adapter NAME=DIR, each folder under --adapters, confined
// to them) and those the catalog remembers: at once where the catalog has the folder's digest for
// its current files, else as pending names read by core.hasher while the engine serves. Failures are
// listed in core.rejected, never thrown (only a missing --adapters root is).
void register_initial_adapters(EngineCore& core);

}  // namespace loradesk::api
