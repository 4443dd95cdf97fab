// Worker threads with a budget for requests whose body is still arriving; see worker_pool.h.
#include "server/worker_pool.h"

#include <sys/socket.h>

#include <algorithm>

namespace loradesk::server {

namespace {

// The pool whose streaming budget the calling worker holds, until its request body has been read.
thread_local WorkerPool* t_streaming_pool = nullptr;

}  // namespace

WorkerPool::WorkerPool(ConnectionGate& gate, int n_threads, int max_streaming, Serve serve)
    : m_gate(gate),
      m_serve(std::move(serve)),
      m_max_streaming(std::max(1, max_streaming)),
      m_active(std::size_t(std::max(1, n_threads)), -1) {
    for (std::size_t i = 0; i < m_active.size(); ++i) m_threads.emplace_back([this, i] { work(i); });
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::push(ReadyConnection c) {
    {
        std::lock_guard lock(m_mutex);
        if (!m_stopping) {
            (c.complete ? m_complete : m_streaming).push_back(std::move(c));
            m_cv.notify_one();
            return;
        }
    }
    m_gate.close(c.fd);
}

void WorkerPool::body_read() {
    if (WorkerPool* pool = std::exchange(t_streaming_pool, nullptr)) pool->release_streaming();
}

void WorkerPool::release_streaming() {
    std::lock_guard lock(m_mutex);
    --m_n_streaming;
    // A streaming request may now be takeable by any idle worker, not only the one woken by push().
    m_cv.notify_all();
}

void WorkerPool::work(std::size_t index) {
    for (;;) {
        ReadyConnection c;
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait(lock, [&] {
                return m_stopping || !m_complete.empty() || (!m_streaming.empty() && m_n_streaming < m_max_streaming);
            });
            if (m_stopping) return;
            // Complete requests first: they cannot block a worker on the network.
            const bool streaming = m_complete.empty();
            std::deque<ReadyConnection>& queue = streaming ? m_streaming : m_complete;
            c = std::move(queue.front());
            queue.pop_front();
            if (streaming) ++m_n_streaming;
            t_streaming_pool = streaming ? this : nullptr;
            m_active[index] = c.fd;
        }
        bool keep = false;
        try {
            keep = m_serve(c);
        } catch (...) {
            keep = false;  // the transport reports its own failures; never let one end a worker
        }
        body_read();  // a request that failed before its handler still returns its share
        {
            std::lock_guard lock(m_mutex);
            m_active[index] = -1;  // from here on the gate owns the fd; stop() must not touch it
        }
        if (keep)
            m_gate.resume(std::move(c));
        else
            m_gate.close(c.fd);
    }
}

void WorkerPool::stop() {
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) return;
        m_stopping = true;
        for (auto* queue : {&m_complete, &m_streaming})
            for (ReadyConnection& c : *queue) m_gate.close(c.fd);
        m_complete.clear();
        m_streaming.clear();
        // A worker waiting for a slow client's body would otherwise hold shutdown for the read timeout.
        for (int fd : m_active)
            if (fd >= 0) ::shutdown(fd, SHUT_RD);
    }
    m_cv.notify_all();
    for (std::thread& t : m_threads)
        if (t.joinable()) t.join();
}

}  // namespace loradesk::server
