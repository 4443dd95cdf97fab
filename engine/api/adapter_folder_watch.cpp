// The engine's adapter folder watcher: polls the --adapters roots and registers, re-registers or
// unloads adapters as their folders appear, change or vanish (see adapter_folder_watch.h).
#include "api/adapter_folder_watch.h"

#include <algorithm>
#include <filesystem>

#include "api/adapter_registration.h"
#include "api/engine_core.h"
#include "catalog/adapter_import.h"
#include "core/error.h"
#include "core/log.h"
#include "model/adapter_name.h"

namespace loradesk::api {
namespace fs = std::filesystem;

namespace {

// Where the watch serves `dir` from: its real path when that lies inside the roots, `dir` itself when
// it points outside them (*outside set: it is listed as refused under that path, as startup does), ""
// when it vanished.
std::string served_path(const std::string& dir, const std::vector<std::string>& roots, std::string* outside) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return {};
    try {
        return confined_folder(dir, roots);
    } catch (const Error& e) {
        *outside = e.what();
        return dir;
    }
}

}  // namespace

AdapterFolderWatch::AdapterFolderWatch(EngineCore& core, std::vector<std::string> roots)
    : m_core(core), m_roots(std::move(roots)) {
    std::set<std::string> unlisted;  // the startup check reports missing roots with the --adapters wording
    m_real_roots = canonical_roots(m_roots);
    for (auto& dir : find_dirs(&unlisted)) {
        std::string outside;
        std::string path = served_path(dir, m_real_roots, &outside);
        if (path.empty()) continue;  // vanished meanwhile; a later poll sees it if it comes back
        m_known[dir] = Known{fs::path(dir).filename().string(), path, catalog::folder_signature(dir)};
    }
}

AdapterFolderWatch::~AdapterFolderWatch() { stop(); }

std::vector<std::string> AdapterFolderWatch::find_dirs(std::set<std::string>* failed_roots) {
    std::vector<std::string> out;
    for (auto& root : m_roots) {
        try {
            auto dirs = catalog::find_adapter_dirs(root);
            out.insert(out.end(), dirs.begin(), dirs.end());
            failed_roots->erase(root);
        } catch (const Error& e) {
            // A root that vanished counts as empty: its adapters are retracted. Warn once, not every poll.
            if (failed_roots->insert(root).second) log::warn("adapter folder watch: {}", e.what());
        }
    }
    return out;
}

bool AdapterFolderWatch::served_from(const std::string& name, const std::string& canonical) const {
    auto found = m_core.registry.find(name);
    return found && found->name == name && found->summary.path == canonical;
}

AdapterFolderWatch::PollReport AdapterFolderWatch::poll_once() {
    std::lock_guard lock(m_poll_mutex);
    PollReport report;
    m_real_roots = canonical_roots(m_roots);
    std::set<std::string> seen;
    for (auto& dir : find_dirs(&m_failed_roots)) {
        if (!seen.insert(dir).second) continue;  // the same folder under two roots
        std::string sig = catalog::folder_signature(dir);
        auto it = m_known.find(dir);
        if (it != m_known.end() && it->second.signature == sig && !it->second.conflict) continue;
        register_dir(dir, sig, it == m_known.end(), report);
    }
    for (auto it = m_known.begin(); it != m_known.end();) {
        if (seen.count(it->first)) {
            ++it;
            continue;
        }
        retract(it->second, report);
        it = m_known.erase(it);
    }
    return report;
}

void AdapterFolderWatch::register_dir(const std::string& dir, const std::string& signature, bool is_new,
                                      PollReport& report) {
    std::string outside;
    std::string path = served_path(dir, m_real_roots, &outside);
    if (path.empty()) return;  // vanished between the listing and now
    Known& k = m_known[dir];
    const bool was_conflict = k.conflict;
    k = Known{fs::path(dir).filename().string(), path, signature};
    if (!outside.empty()) {  // a symlink out of the roots: refused like the load API refuses it
        log::warn("adapter folder watch: '{}' not served: {}", model::printable_text(dir),
                  model::printable_text(outside));
        list_rejected(m_core, k.name, dir, outside);
        report.failed.push_back(k.name + ": " + outside);
        return;
    }

    // A name served from another folder (another root, --adapter NAME=DIR, the catalog) keeps it: a
    // folder dropped in later must not silently replace what clients are using. Retried every poll.
    if (auto cur = m_core.registry.find(k.name); cur && cur->summary.path != k.canonical) {
        if (!was_conflict)
            log::warn("adapter folder '{}' not served: the name '{}' is already served from '{}' (rename the folder)",
                      model::printable_text(dir), k.name, cur->summary.path);
        k.conflict = true;
        return;
    }
    {
        // The folder is tried again: its previous rejection (if any) is replaced by this attempt's outcome.
        std::lock_guard core_lock(m_core.mutex);
        m_core.rejected.erase(k.canonical);
    }
    const bool serving = served_from(k.name, k.canonical);  // re-read in place (also a pending one)
    const bool was_served = !is_new && serving;
    try {
        register_adapter_folder(m_core, k.name, k.canonical, serving ? lora::OnTaken::replace : lora::OnTaken::refuse,
                                true);
        (is_new || !was_served ? report.added : report.changed).push_back(k.name);
    } catch (const Error& e) {
        log::warn("adapter folder watch: '{}' not served: {}", model::printable_name(k.name),
                  model::printable_text(e.what()));
        report.failed.push_back(k.name + ": " + e.what());
        // The folder no longer holds what is registered under its name: stop serving the old content
        // (the disk loader would read the new files for it). Running requests keep their lease.
        if (served_from(k.name, k.canonical)) {
            auto found = m_core.registry.find(k.name);
            m_core.registry.unload(k.name);
            if (m_core.catalog && found)
                m_core.catalog->event(catalog::EventKind::unload, found->summary.digest, k.name, "folder changed");
        }
    }
}

void AdapterFolderWatch::retract(const Known& k, PollReport& report) {
    bool dropped = false;
    if (auto found = m_core.registry.find(k.name);
        found && found->name == k.name && found->summary.path == k.canonical) {
        try {
            m_core.registry.unload(k.name);  // requests already running keep the adapter until they end
            dropped = true;
            if (m_core.catalog)
                m_core.catalog->event(catalog::EventKind::unload, found->summary.digest, k.name, "folder removed");
        } catch (const Error& e) {
            log::warn("adapter folder watch: cannot unload '{}': {}", k.name, e.what());  // unloaded meanwhile
        }
    }
    {
        std::lock_guard lock(m_core.mutex);
        dropped |= m_core.rejected.erase(k.canonical) > 0;
    }
    if (m_core.catalog) {
        m_core.catalog->mark_missing(k.name, k.canonical);
        m_core.catalog->forget_folder_digest(k.canonical);  // the cached digest of a folder that is gone
    }
    if (dropped) {
        log::info("adapter '{}' unloaded: its folder {} is gone", k.name, k.canonical);
        report.removed.push_back(k.name);
    }
}

void AdapterFolderWatch::start(std::chrono::milliseconds interval) {
    std::lock_guard lock(m_thread_mutex);
    if (m_thread.joinable() || interval.count() <= 0) return;
    m_stop = false;
    m_thread = std::thread([this, interval] {
        std::unique_lock lock(m_thread_mutex);
        while (!m_cv.wait_for(lock, interval, [this] { return m_stop; })) {
            lock.unlock();
            try {
                poll_once();
            } catch (const std::exception& e) {
                log::warn("adapter folder watch: poll failed: {}", e.what());  // next poll tries again
            }
            lock.lock();
        }
    });
}

void AdapterFolderWatch::stop() {
    {
        std::lock_guard lock(m_thread_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace loradesk::api
