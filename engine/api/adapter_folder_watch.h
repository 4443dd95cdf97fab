// AdapterFolderWatch: keeps the served adapters in step with the --adapters folders while the engine
// runs. A poll registers folders that appeared (the same register_adapter_folder path as startup, so
// incompatible ones are listed with their reason), re-registers folders whose files changed (a new
// digest is a new identity; the registry frees the old one once idle) and unloads adapters whose folder
// vanished (running requests finish; the catalog marks them missing). Change detection is
// lora::folder_signature (inode, size, mtime, ctime), so an unchanged folder costs two stat calls per
// poll. A folder that is a symlink out of the roots is refused and listed, as at startup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace loradesk::api {

struct EngineCore;

class AdapterFolderWatch {
  public:
    // What one poll did, by adapter name (folder name).
    struct PollReport {
        std::vector<std::string> added;    // new folders now served
        std::vector<std::string> changed;  // re-registered after their files changed
        std::vector<std::string> removed;  // folder vanished: unloaded and/or dropped from the rejected list
        std::vector<std::string> failed;   // "name: reason" for folders that could not be registered
    };

    // Records the current signature of every adapter folder under `roots`, so that the folders the
    // engine registers at startup are not registered a second time by the first poll. Roots that do
    // not exist are left to the startup check, which reports them. `core` must outlive this object.
    AdapterFolderWatch(EngineCore& core, std::vector<std::string> roots);
    ~AdapterFolderWatch();
    AdapterFolderWatch(const AdapterFolderWatch&) = delete;
    AdapterFolderWatch& operator=(const AdapterFolderWatch&) = delete;

    // One pass over the roots. Callable from any thread; concurrent calls run one after the other.
    PollReport poll_once();
    // Polls on a background thread every `interval` until stop(). Idempotent.
    void start(std::chrono::milliseconds interval);
    // Wakes and joins the thread (waits for a poll in progress). Idempotent.
    void stop();

  private:
    struct Known {
        std::string name;       // folder name = adapter name
        std::string canonical;  // the path registered (fs::canonical), compared with the summary's path
        std::string signature;  // folder_signature at the last attempt
        bool conflict = false;  // the name is served from another folder; retried while it stays so
    };

    std::vector<std::string> find_dirs(std::set<std::string>* failed_roots);
    void register_dir(const std::string& dir, const std::string& signature, bool is_new, PollReport& report);
    void retract(const Known& k, PollReport& report);
    bool served_from(const std::string& name, const std::string& canonical) const;

    EngineCore& m_core;
    std::vector<std::string> m_roots;
    std::vector<std::string> m_real_roots;  // canonical_roots(m_roots) as of the last poll
    std::mutex m_poll_mutex;                // one poll at a time; guards the members below
    std::map<std::string, Known> m_known;   // found folder path -> what the last poll saw
    std::set<std::string> m_failed_roots;   // roots that could not be listed (warned once)

    std::mutex m_thread_mutex;
    std::condition_variable m_cv;
    bool m_stop = false;
    std::thread m_thread;
};

}  // namespace loradesk::api
