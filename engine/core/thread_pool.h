// A fixed pool of worker threads with a blocking parallel_for (the CPU runner's matmuls) and
// fire-and-forget tasks (adapter prefetch). parallel_for may be called from one thread at a time per
// pool; submit() is thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loradesk {

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);  // 0 = hardware concurrency
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(m_workers.size()) + 1; }  // the caller works too

    // Splits [0, n) into contiguous chunks and runs fn(begin, end) on them; returns when all are done.
    // Rethrows the first exception thrown by fn.
    void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
                      std::size_t min_chunk = 1);

    void submit(std::function<void()> task);

  private:
    void worker_loop();
    std::vector<std::thread> m_workers;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<std::function<void()>> m_tasks;
    bool m_stop = false;
};

}  // namespace loradesk
