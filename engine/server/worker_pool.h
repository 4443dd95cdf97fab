// The threads that serve requests whose head has arrived (see connection_gate.h). Requests that can be read
// without waiting (no body, or the gate already holds all of it) and requests whose body is still on the wire are
// queued apart; at most `max_streaming` workers read bodies from the wire at once, so clients that send slowly
// can occupy no more than that share of the pool and the rest stays free for complete requests such as /health.
// Each worker hands its connection back to the gate (kept alive or closed) when the request is answered.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/connection_gate.h"

namespace loradesk::server {

// Thread-safe.
class WorkerPool {
  public:
    // Answers one request on `c` (its fd in blocking mode) and returns whether the connection stays open for the
    // next one; `c.buffered` then holds the bytes read past this request.
    using Serve = std::function<bool(ReadyConnection& c)>;

    WorkerPool(ConnectionGate& gate, int n_threads, int max_streaming, Serve serve);
    ~WorkerPool();  // stop()
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void push(ReadyConnection c);

    // Called by a worker once its request's body has been read completely (the handler is running): returns the
    // worker's share of the streaming budget early, so long generations do not hold it.
    static void body_read();

    // Closes queued connections, unblocks workers waiting on a client's body (their sockets are shut for
    // reading), lets running requests finish and joins. Idempotent.
    void stop();

  private:
    void work(std::size_t index);
    void release_streaming();

    ConnectionGate& m_gate;
    Serve m_serve;
    const int m_max_streaming;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<ReadyConnection> m_complete, m_streaming;
    int m_n_streaming = 0;
    std::vector<int> m_active;  // per worker: the fd it serves, or -1
    bool m_stopping = false;
    std::vector<std::thread> m_threads;
};

}  // namespace loradesk::server
