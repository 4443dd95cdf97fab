// Adapter folders to served adapters: the digest cache, synchronous and background registration, and
// the startup set; see adapter_registration.h.
#include "api/adapter_registration.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

#include "api/engine_core.h"
#include "core/error.h"
#include "core/log.h"
#include "lora/adapter_loader.h"
#include "model/adapter_name.h"

namespace loradesk::api {
namespace fs = std::filesystem;

namespace {

int64_t now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What a cached compatibility verdict was reached against: the base model's shapes and the rank limit.
std::string compat_key(const EngineCore& c) {
    const model::ModelConfig& m = c.config;
    return fmt::format("{}|{}|layers {}|hidden {}|intermediate {}|q {}|kv {}|max rank {}", c.model_id,
                       m.architecture_name, m.n_layers, m.hidden_size, m.intermediate_size, m.q_dim(), m.kv_dim(),
                       c.options.max_lora_rank);
}

struct FolderRead {
    lora::AdapterSummary summary;
    bool compatible = true;
    ErrorCode code = ErrorCode::ok;
    std::string reason;  // why not, when !compatible
};

// Shapes and ranks against the loaded base ("is it for another base model?"): header reads only.
void check_against_base(const EngineCore& core, const std::string& dir, FolderRead& r) {
    try {
        lora::plan_adapter(dir, &core.config, core.options.max_lora_rank);
        r.compatible = true;
        r.reason.clear();
    } catch (const ExpectedError& e) {
        r.compatible = false;
        r.code = e.code();
        r.reason = e.what();
    }
}

// The cache entry for `dir` when its files still have the signature it was hashed with.
std::optional<catalog::FolderDigest> cached_entry(EngineCore& core, const std::string& dir, const std::string& sig) {
    if (!core.catalog) return std::nullopt;
    auto cached = core.catalog->folder_digest(dir);
    if (!cached || cached->signature != sig) return std::nullopt;
    return cached;
}

FolderRead from_cache(const catalog::FolderDigest& cached) {
    FolderRead r;
    r.summary = cached.summary;
    r.compatible = cached.compat != catalog::Compat::incompatible;
    r.code = r.compatible ? ErrorCode::ok : ErrorCode::invalid_argument;
    r.reason = cached.compat_reason;
    return r;
}

// The folder's digest, summary and verdict: from the cache while its files are unchanged (checking
// compatibility again only when the base or the limits changed), else by reading and hashing it; the
// cache is updated either way. Throws when the folder is not a readable adapter.
FolderRead read_folder(EngineCore& core, const std::string& dir) {
    const std::string key = compat_key(core);
    const std::string sig = lora::folder_signature(dir);
    auto cached = cached_entry(core, dir, sig);
    if (cached && cached->compat_key == key) return from_cache(*cached);
    FolderRead r;
    if (cached) {
        r.summary = cached->summary;
    } else {
        r.summary = lora::summarize_adapter(dir);  // the expensive part: every tensor byte is hashed
    }
    check_against_base(core, dir, r);
    if (core.catalog) {
        catalog::FolderDigest entry{dir,
                                    r.summary.signature,
                                    r.summary,
                                    key,
                                    r.compatible ? catalog::Compat::compatible : catalog::Compat::incompatible,
                                    r.reason,
                                    now_unix()};
        entry.summary.name.clear();
        core.catalog->put_folder_digest(entry);
    }
    return r;
}

// The catalog remembers a folder that does not fit this base, with the reason (as `catalog list` shows).
void record_incompatible(EngineCore& core, const std::string& name, const FolderRead& r) {
    if (!core.catalog) return;
    lora::AdapterSummary s = r.summary;
    s.name = name;
    core.catalog->register_adapter(s, {catalog::Compat::incompatible, r.reason, core.model_id});
}

// What an engine start needs of the catalog, read once rather than once per folder (thousands), and
// the registrations of cached folders, written in one transaction at the end.
struct StartupCache {
    std::map<std::string, catalog::FolderDigest> folders;  // by path
    std::map<std::string, int64_t> created;                // by digest
    std::vector<catalog::AdapterRegistration> to_register;
};

// After the registry took a name: catalog record (deferred into `batch` at startup), load event, the
// store's pin, the log line.
void record_registered(EngineCore& core, const lora::RegisteredAdapter& reg, StartupCache* batch = nullptr) {
    const lora::AdapterSummary& s = reg.summary;
    {
        std::lock_guard lock(core.mutex);
        core.rejected.erase(s.path);
    }
    if (reg.pinned) core.store->set_pinned(s.digest, true);
    if (core.catalog) {
        catalog::Compatibility compat{catalog::Compat::compatible, "", core.model_id};
        if (batch) {
            batch->to_register.push_back({s, compat});
        } else {
            core.catalog->register_adapter(s, compat);
            // A pin set while the folder was still being read had no catalog row to go to.
            if (reg.pinned) core.catalog->set_pinned(reg.name, true);
        }
        core.catalog->event(catalog::EventKind::load, s.digest, reg.name, s.path);
    }
    log::info("adapter '{}' registered from {} (rank {}, digest {})", reg.name, s.path, s.rank, s.digest.substr(0, 12));
}

int64_t content_created(EngineCore& core, const std::string& digest) {
    return core.catalog ? core.catalog->content_created_unix(digest) : 0;
}

// A pending name whose folder turned out unservable: waiting and later requests get not_found with the
// reason (as for a folder found unservable at once), and the folder is listed with it.
void fail_pending(EngineCore& core, const std::string& name, const std::string& dir, uint64_t ticket,
                  const std::string& reason) {
    if (core.registry.fail_pending(name, ticket, ErrorCode::not_found, not_served_message(name, reason)))
        list_rejected(core, name, dir, reason);
}

// The hasher job of a pending name: read the folder, then resolve the name or fail it.
void complete_pending(EngineCore& core, const std::string& name, const std::string& dir, uint64_t ticket) {
    try {
        FolderRead r = read_folder(core, dir);
        if (!r.compatible) {
            record_incompatible(core, name, r);
            fail_pending(core, name, dir, ticket, r.reason);
            return;
        }
        lora::AdapterSummary s = r.summary;
        s.name = name;
        if (!core.registry.resolve_pending(name, ticket, s, content_created(core, s.digest))) return;  // moved on
        if (auto reg = core.registry.find(name); reg && reg->summary.digest == s.digest) record_registered(core, *reg);
    } catch (const std::exception& e) {
        log::warn("adapter '{}' not served: {}", name, model::printable_text(e.what()));
        fail_pending(core, name, dir, ticket, e.what());
    }
}

// Startup: registers `name` for `dir` at once when its digest is cached, else as a pending name whose
// folder core.hasher reads in the background. Failures are listed in core.rejected, never thrown.
void register_at_start(EngineCore& core, StartupCache& cache, const std::string& name, const std::string& dir,
                       bool pinned = false) {
    try {
        check_served_name(core, name);
        auto cached = cache.folders.find(dir);
        if (cached != cache.folders.end() && cached->second.signature == lora::folder_signature(dir) &&
            cached->second.compat_key == compat_key(core)) {
            FolderRead r = from_cache(cached->second);
            if (!r.compatible) throw_expected(r.code, r.reason);
            r.summary.name = name;
            auto created = cache.created.find(r.summary.digest);
            core.registry.add(name, r.summary, lora::OnTaken::refuse,
                              created == cache.created.end() ? 0 : created->second);
            if (pinned) core.registry.set_pinned(name, true);
            record_registered(core, *core.registry.find(name), &cache);
            return;
        }
        const uint64_t ticket = core.registry.add_pending(name, dir);
        if (pinned) core.registry.set_pinned(name, true);
        AdapterHasher::Job job;
        job.key = name;
        job.run = [&core, name, dir, ticket] { complete_pending(core, name, dir, ticket); };
        job.cancel = [&core, name, ticket] {
            core.registry.fail_pending(name, ticket, ErrorCode::unavailable,
                                       "the engine stopped before adapter '" + name + "' was read");
        };
        core.hasher->enqueue(std::move(job));
    } catch (const Error& e) {
        // One bad adapter must not keep the server from starting; it is listed with its reason.
        log::warn("adapter '{}' not served: {}", model::printable_name(name), model::printable_text(e.what()));
        list_rejected(core, name, dir, e.what());
    }
}

}  // namespace

std::string not_served_message(const std::string& name, const std::string& reason) {
    return "adapter '" + model::printable_name(name) + "' is not served: " + reason;
}

void check_served_name(const EngineCore& core, const std::string& name, const char* what) {
    model::check_adapter_name(name, core.model_id, what);
}

std::vector<std::string> canonical_roots(const std::vector<std::string>& roots) {
    std::vector<std::string> out;
    for (const std::string& root : roots) {
        std::error_code ec;
        const fs::path r = fs::canonical(root, ec);
        if (!ec) out.push_back(r.string());
    }
    return out;
}

std::string confined_folder(const std::string& dir, const std::vector<std::string>& roots) {
    std::error_code ec;
    const fs::path real = fs::canonical(dir, ec);
    if (ec)
        throw_expected(ErrorCode::not_found, fmt::format("adapter folder '{}' cannot be resolved ({})",
                                                         model::printable_text(dir), ec.message()));
    std::string listed;
    for (const std::string& root : roots) {
        listed += (listed.empty() ? "'" : ", '") + model::printable_text(root) + "'";
        const fs::path rel = real.lexically_relative(root);
        if (!rel.empty() && rel != "." && *rel.begin() != "..") return real.string();
    }
    throw_expected(ErrorCode::invalid_argument,
                   fmt::format("adapter folder '{}' resolves to '{}', outside the adapter folders ({}); a symlink "
                               "there must point inside them: copy the adapter in instead",
                               model::printable_text(dir), model::printable_text(real.string()), listed));
}

void list_rejected(EngineCore& core, const std::string& name, const std::string& dir, const std::string& reason) {
    std::lock_guard lock(core.mutex);
    core.rejected[dir] = RejectedAdapter{name, dir, reason};
}

lora::RegisteredAdapter register_adapter_folder(EngineCore& core, const std::string& name, const std::string& dir,
                                                lora::OnTaken on_taken, bool list_rejection) {
    try {
        check_served_name(core, name);
        // Refused before the folder is read: a taken name costs no hashing.
        if (on_taken == lora::OnTaken::refuse) core.registry.check_name_free(name);
        FolderRead r = read_folder(core, dir);
        if (!r.compatible) {
            if (list_rejection) record_incompatible(core, name, r);
            throw_expected(r.code, r.reason);
        }
        lora::AdapterSummary s = r.summary;
        s.name = name;
        lora::RegisteredAdapter reg = core.registry.add(name, s, on_taken, content_created(core, s.digest));
        record_registered(core, reg);
        return reg;
    } catch (const Error& e) {
        if (list_rejection && e.code() != ErrorCode::conflict) list_rejected(core, name, dir, e.what());
        throw;
    }
}

void register_initial_adapters(EngineCore& core) {
    const EngineOptions& o = core.options;
    StartupCache cache;
    if (core.catalog) {
        cache.folders = core.catalog->folder_digests();
        cache.created = core.catalog->content_created_times();
    }
    for (auto& [name, dir] : o.named_adapters) {
        std::error_code ec;
        const fs::path real = fs::canonical(dir, ec);
        if (ec) {
            log::warn("adapter '{}' not served: folder '{}' cannot be resolved ({})", model::printable_name(name),
                      model::printable_text(dir), ec.message());
            list_rejected(core, name, dir, "adapter folder '" + dir + "' cannot be resolved (" + ec.message() + ")");
            continue;
        }
        register_at_start(core, cache, name, real.string());
    }
    const std::vector<std::string> roots = canonical_roots(o.adapter_dirs);
    for (auto& root : o.adapter_dirs) {
        std::error_code ec;
        if (!fs::is_directory(root, ec))
            throw_expected(ErrorCode::not_found, "--adapters folder '" + root + "' does not exist");
        for (auto& dir : catalog::find_adapter_dirs(root)) {
            const std::string name = fs::path(dir).filename().string();
            std::string real;
            try {
                real = confined_folder(dir, roots);
            } catch (const Error& e) {
                log::warn("adapter '{}' not served: {}", model::printable_name(name), model::printable_text(e.what()));
                list_rejected(core, name, dir, e.what());
                continue;
            }
            register_at_start(core, cache, name, real);
        }
    }
    if (!core.catalog) return;
    // Adapters remembered from earlier runs (imports, loads) whose folders still exist; pins come back.
    for (auto& rec : core.catalog->servable_adapters()) {
        if (auto reg = core.registry.find(rec.name)) {
            if (rec.pinned && reg->summary.path == rec.path) {
                core.registry.set_pinned(rec.name, true);
                if (!reg->pending) core.store->set_pinned(reg->summary.digest, true);
            }
            continue;
        }
        if (rec.compat == catalog::Compat::incompatible) continue;
        register_at_start(core, cache, rec.name, rec.path, rec.pinned);
    }
    try {
        core.catalog->register_adapters(cache.to_register);
    } catch (const Error& e) {
        // The adapters are served regardless; the catalog catches up when they are next registered.
        log::warn("catalog: could not record {} adapters found at start-up: {}", cache.to_register.size(), e.what());
    }
}

}  // namespace loradesk::api
