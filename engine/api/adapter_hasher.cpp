// The background folder-reading queue; see adapter_hasher.h.
#include "api/adapter_hasher.h"

#include <algorithm>

namespace loradesk::api {

AdapterHasher::AdapterHasher(int n_threads) {
    for (int i = 0; i < std::max(1, n_threads); ++i) m_threads.emplace_back([this] { worker(); });
}

AdapterHasher::~AdapterHasher() { stop(); }

void AdapterHasher::enqueue(Job job) {
    {
        std::lock_guard lock(m_mutex);
        if (!m_stop) {
            m_queue.push_back(std::move(job));
            m_cv.notify_one();
            return;
        }
    }
    if (job.cancel) job.cancel();
}

void AdapterHasher::prioritize(const std::string& key) {
    std::lock_guard lock(m_mutex);
    auto it = std::find_if(m_queue.begin(), m_queue.end(), [&](const Job& j) { return j.key == key; });
    if (it == m_queue.end() || it == m_queue.begin()) return;
    Job job = std::move(*it);
    m_queue.erase(it);
    m_queue.push_front(std::move(job));
}

std::size_t AdapterHasher::outstanding() const {
    std::lock_guard lock(m_mutex);
    return m_queue.size() + std::size_t(m_running);
}

void AdapterHasher::wait_idle() const {
    std::unique_lock lock(m_mutex);
    m_idle_cv.wait(lock, [this] { return m_queue.empty() && m_running == 0; });
}

void AdapterHasher::worker() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_cv.wait(lock, [this] { return m_stop || !m_queue.empty(); });
        if (m_stop) return;
        Job job = std::move(m_queue.front());
        m_queue.pop_front();
        ++m_running;
        lock.unlock();
        job.run();
        lock.lock();
        --m_running;
        m_idle_cv.notify_all();
    }
}

void AdapterHasher::stop() {
    std::lock_guard stopping(m_stop_mutex);  // a second caller waits for the first to finish
    std::deque<Job> dropped;
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
        dropped.swap(m_queue);
    }
    m_cv.notify_all();
    for (auto& t : m_threads)
        if (t.joinable()) t.join();
    m_threads.clear();
    for (auto& job : dropped)
        if (job.cancel) job.cancel();
    m_idle_cv.notify_all();
}

}  // namespace loradesk::api
