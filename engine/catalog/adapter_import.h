// Importing adapter folders into the catalog: one-shot scans and a polling folder watcher.
// Reading an adapter (config, tensors, digest) is the lora layer's job, above this one; it comes in as
// a Summarizer (lora::summarize_adapter, passed in by engine/api and by `loradeskd catalog import`), so
// this file never parses safetensors itself.
// Compatibility with the loaded base model comes in as a callback; check_against_base() covers the
// common case. Nothing here ever writes to or deletes the user's adapter folders.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "model/adapter_folder.h"

namespace loradesk::catalog {

using Summarizer = std::function<model::AdapterSummary(const std::string& dir)>;
using CompatibilityCheck = std::function<Compatibility(const model::AdapterSummary&)>;

// What the loaded base model offers to adapters.
struct BaseShapes {
    std::string name;  // base model id (folder name)
    int n_layers = 0;
    std::set<std::string> modules;  // LoRA-targetable module short names: q_proj, k_proj, ...
    int max_rank = 0;               // --max-lora-rank; 0 = no limit
};
Compatibility check_against_base(const model::AdapterSummary& summary, const BaseShapes& base);

struct ImportReport {
    std::vector<RegisterResult> registered;                   // added, new versions, refreshed
    std::vector<std::pair<std::string, std::string>> failed;  // folder, error message
    std::vector<std::string> missing;                         // names whose folder disappeared
    int skipped = 0;                                          // unchanged or ignored folders
};

bool is_adapter_dir(const std::string& dir);  // holds adapter_config.json
// Changes whenever adapter_config.json or adapter_model.safetensors changes (inode, size, mtime, ctime).
using model::folder_signature;
// Adapter folders under `path`: the folder itself when it is one, else its direct subfolders that are.
std::vector<std::string> find_adapter_dirs(const std::string& path);

// Registers every adapter folder found at `path` (explicit import: ignored folders are imported again).
ImportReport import_path(Catalog& catalog, const std::string& path, const Summarizer& summarize,
                         const CompatibilityCheck& compat = {});

// Polls root folders and keeps the catalog in step with them: new or changed adapter folders are
// registered (a changed one becomes a new version of its name), vanished ones are marked missing.
// Opens its own catalog connection. poll_once() may be called from one thread at a time; start()
// runs it on a background thread every `interval` until stop() or destruction.
class AdapterWatcher {
  public:
    AdapterWatcher(const std::string& db_path, std::vector<std::string> roots, Summarizer summarize,
                   CompatibilityCheck compat = {}, std::chrono::milliseconds interval = std::chrono::seconds(2));
    ~AdapterWatcher();
    AdapterWatcher(const AdapterWatcher&) = delete;
    AdapterWatcher& operator=(const AdapterWatcher&) = delete;

    ImportReport poll_once();
    void start();
    void stop();

  private:
    std::unique_ptr<Catalog> m_catalog;
    std::vector<std::string> m_roots;
    Summarizer m_summarize;
    CompatibilityCheck m_compat;
    std::chrono::milliseconds m_interval;
    std::map<std::string, std::string> m_failed;  // folder -> signature that failed (not retried until it changes)
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stop = false;
    std::thread m_thread;
};

}  // namespace loradesk::catalog
