// Adapter folder scans, the polling watcher and the default base-model compatibility check.
#include "catalog/adapter_import.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"

namespace loradesk::catalog {
namespace fs = std::filesystem;

namespace {

std::string absolute_path(const std::string& p) {
    std::error_code ec;
    auto abs = fs::weakly_canonical(fs::absolute(p), ec);
    return (ec ? fs::absolute(p) : abs).string();
}

model::AdapterSummary summarize_named(const Summarizer& summarize, const std::string& dir) {
    model::AdapterSummary s = summarize(dir);
    // Adapters are named after their folders, whatever the summarizer filled in.
    s.name = fs::path(dir).filename().string();
    s.path = dir;
    return s;
}

}  // namespace

Compatibility check_against_base(const model::AdapterSummary& s, const BaseShapes& base) {
    Compatibility c{Compat::compatible, "", base.name};
    auto fail = [&](std::string reason) {
        c.state = Compat::incompatible;
        c.reason = std::move(reason);
        return c;
    };
    for (auto& t : s.targets)
        if (!base.modules.count(t))
            return fail(
                fmt::format("targets module '{}' which base model '{}' does not have (is it for another base "
                            "model?)",
                            t, base.name));
    for (int layer : s.layers)
        if (layer < 0 || layer >= base.n_layers)
            return fail(
                fmt::format("has weights for layer {} but base model '{}' has {} layers (is it for another "
                            "base model?)",
                            layer, base.name, base.n_layers));
    if (base.max_rank > 0 && s.rank > base.max_rank)
        return fail(fmt::format("has rank {} above --max-lora-rank {} (raise --max-lora-rank to serve it)", s.rank,
                                base.max_rank));
    return c;
}

bool is_adapter_dir(const std::string& dir) {
    std::error_code ec;
    return fs::is_regular_file(fs::path(dir) / "adapter_config.json", ec);
}

std::vector<std::string> find_adapter_dirs(const std::string& path) {
    std::string root = absolute_path(path);
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        throw_expected(ErrorCode::not_found,
                       fmt::format("adapter folder '{}' does not exist or is not a directory", path));
    if (is_adapter_dir(root)) return {root};
    std::vector<std::string> out;
    for (auto it = fs::directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code e2;
        if (it->is_directory(e2) && is_adapter_dir(it->path().string())) out.push_back(it->path().string());
    }
    if (ec) throw_expected(ErrorCode::io, fmt::format("cannot list adapter folder '{}': {}", path, ec.message()));
    std::sort(out.begin(), out.end());
    return out;
}

ImportReport import_path(Catalog& catalog, const std::string& path, const Summarizer& summarize,
                         const CompatibilityCheck& compat) {
    ImportReport report;
    for (auto& dir : find_adapter_dirs(path)) {
        try {
            auto s = summarize_named(summarize, dir);
            report.registered.push_back(
                catalog.register_adapter(s, compat ? compat(s) : Compatibility{}, folder_signature(dir)));
        } catch (const Error& e) {
            report.failed.emplace_back(dir, e.what());
        }
    }
    return report;
}

AdapterWatcher::AdapterWatcher(const std::string& db_path, std::vector<std::string> roots, Summarizer summarize,
                               CompatibilityCheck compat, std::chrono::milliseconds interval)
    : m_catalog(std::make_unique<Catalog>(db_path)),
      m_summarize(std::move(summarize)),
      m_compat(std::move(compat)),
      m_interval(interval) {
    for (auto& r : roots) m_roots.push_back(absolute_path(r));
}

AdapterWatcher::~AdapterWatcher() { stop(); }

ImportReport AdapterWatcher::poll_once() {
    ImportReport report;
    std::set<std::string> seen;
    for (auto& root : m_roots) {
        std::vector<std::string> dirs;
        try {
            dirs = find_adapter_dirs(root);
        } catch (const Error& e) {
            log::warn("adapter watcher: {}", e.what());  // a root that vanished marks its adapters missing below
        }
        for (auto& dir : dirs) {
            seen.insert(dir);
            std::string sig = folder_signature(dir);
            if (m_catalog->is_ignored(dir) || m_catalog->current_signature(dir) == sig ||
                (m_failed.count(dir) && m_failed[dir] == sig)) {
                ++report.skipped;
                continue;
            }
            try {
                auto s = summarize_named(m_summarize, dir);
                report.registered.push_back(
                    m_catalog->register_adapter(s, m_compat ? m_compat(s) : Compatibility{}, sig));
                m_failed.erase(dir);
            } catch (const Error& e) {
                m_failed[dir] = sig;
                report.failed.emplace_back(dir, e.what());
                log::warn("adapter watcher: cannot register '{}': {}", dir, e.what());
            }
        }
    }
    for (auto& rec : m_catalog->list()) {
        if (rec.missing || seen.count(rec.path)) continue;
        bool under_root = std::any_of(m_roots.begin(), m_roots.end(), [&](const std::string& r) {
            return rec.path.size() > r.size() && rec.path.compare(0, r.size(), r) == 0 && rec.path[r.size()] == '/';
        });
        if (under_root && !is_adapter_dir(rec.path)) {
            m_catalog->set_missing(rec.name, true);
            report.missing.push_back(rec.name);
        }
    }
    return report;
}

void AdapterWatcher::start() {
    std::lock_guard lock(m_mutex);
    if (m_thread.joinable()) return;
    m_stop = false;
    m_thread = std::thread([this] {
        std::unique_lock lock(m_mutex);
        while (!m_stop) {
            lock.unlock();
            try {
                poll_once();
            } catch (const std::exception& e) {
                log::warn("adapter watcher: poll failed: {}", e.what());
            }
            lock.lock();
            m_cv.wait_for(lock, m_interval, [this] { return m_stop; });
        }
    });
}

void AdapterWatcher::stop() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace loradesk::catalog
