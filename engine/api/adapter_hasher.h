// AdapterHasher: a few background threads that read (hash and check) adapter folders whose digest is
// not cached, so the engine serves while thousands of folders are still being read. Jobs run in the
// order they came, except that a job somebody waits for (a request for that adapter) is moved to the
// front. Knows nothing of adapters itself: a job is a pair of callbacks keyed by adapter name.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace loradesk::api {

class AdapterHasher {
  public:
    struct Job {
        std::string key;               // adapter name: what prioritize() is called with
        std::function<void()> run;     // on a hasher thread; must not throw
        std::function<void()> cancel;  // instead of run, when the hasher stops first; must not throw
    };

    explicit AdapterHasher(int n_threads);
    ~AdapterHasher();  // stop()
    AdapterHasher(const AdapterHasher&) = delete;
    AdapterHasher& operator=(const AdapterHasher&) = delete;

    // Queues a job (cancelled at once when stopped).
    void enqueue(Job job);
    // Moves the queued job with this key to the front; no-op when none is queued (done or running).
    void prioritize(const std::string& key);
    // Jobs queued or running.
    std::size_t outstanding() const;
    // Waits until no job is queued or running (tests, benchmarks).
    void wait_idle() const;
    // Cancels queued jobs, waits for running ones, joins the threads. Idempotent.
    void stop();

  private:
    void worker();

    std::mutex m_stop_mutex;  // serialises stop()
    mutable std::mutex m_mutex;
    mutable std::condition_variable m_cv;       // work arrived or stop
    mutable std::condition_variable m_idle_cv;  // a job finished
    std::deque<Job> m_queue;
    int m_running = 0;
    bool m_stop = false;
    std::vector<std::thread> m_threads;
};

}  // namespace loradesk::api
