#include "core/thread_pool.h"

#include <algorithm>
#include <exception>

namespace loradesk {

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 0; i < n_threads - 1; ++i) m_workers.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    for (auto& t : m_workers) t.join();
}

void ThreadPool::worker_loop() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait(lock, [&] { return m_stop || !m_tasks.empty(); });
            if (m_stop && m_tasks.empty()) return;
            task = std::move(m_tasks.front());
            m_tasks.pop_front();
        }
        task();
    }
}

void ThreadPool::submit(std::function<void()> task) {
    {
        std::lock_guard lock(m_mutex);
        m_tasks.push_back(std::move(task));
    }
    m_cv.notify_one();
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
                              std::size_t min_chunk) {
    if (n == 0) return;
    std::size_t n_chunks =
        std::min<std::size_t>(std::size_t(size()), (n + min_chunk - 1) / std::max<std::size_t>(min_chunk, 1));
    if (n_chunks <= 1 || m_workers.empty()) {
        fn(0, n);
        return;
    }
    std::size_t per = (n + n_chunks - 1) / n_chunks;
    std::size_t remaining = n_chunks - 1;  // guarded by done_mutex
    std::mutex done_mutex;
    std::condition_variable done_cv;
    std::exception_ptr error;
    std::mutex error_mutex;
    auto run = [&](std::size_t c) {
        std::size_t b = c * per, e = std::min(n, b + per);
        if (b >= e) return;
        try {
            fn(b, e);
        } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    };
    for (std::size_t c = 1; c < n_chunks; ++c) {
        submit([&, c] {
            run(c);
            // Decrement under the lock: the caller's stack frame (this mutex) must outlive our last touch.
            std::lock_guard lock(done_mutex);
            if (--remaining == 0) done_cv.notify_one();
        });
    }
    run(0);
    std::unique_lock lock(done_mutex);
    done_cv.wait(lock, [&] { return remaining == 0; });
    if (error) std::rethrow_exception(error);
}

}  // namespace loradesk
