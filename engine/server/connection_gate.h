// The socket front of the HTTP server, below cpp-httplib. It owns the listening socket and every connection that
// is between requests (just accepted, kept alive, or still sending its request head) in one epoll loop, so idle
// and slow clients never hold a worker thread. A connection is dispatched to a worker only once its request head
// has arrived, and with it the whole body when that is small and framed by Content-Length. The gate enforces the
// head size and line caps (431), the head deadline (408), the keep-alive idle timeout and the connection cap, and
// closes connections with a short lingering drain so that clients get to read their error responses.
// It knows no HTTP beyond the end of the head and its framing headers: cpp-httplib parses the same bytes again.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"

namespace loradesk::server {

struct GateLimits {
    int backlog = 511;           // the kernel's queue of connections not yet accepted
    int max_connections = 1024;  // open sockets; at the cap the longest-waiting idle or slow one is dropped
    std::size_t max_head_bytes = std::size_t(32) << 10;  // request line + headers
    int max_header_lines = 100;                          // header fields (cpp-httplib's CPPHTTPLIB_HEADER_MAX_COUNT)
    std::size_t prefetch_body_bytes = std::size_t(64) << 10;  // Content-Length bodies up to this wait in the gate
    std::chrono::milliseconds head_timeout{10000};  // from accept (or a kept-alive request's first byte) to the end
                                                    // of its head and prefetched body
    std::chrono::milliseconds idle_timeout{5000};   // a kept-alive connection without a new request
    std::chrono::milliseconds linger{2000};         // reading and discarding after a final response
};

// A connection handed to a worker, in blocking mode; its request head has been read.
struct ReadyConnection {
    int fd = -1;
    std::string buffered;   // bytes already read off the socket, starting with the request line
    bool complete = false;  // reading this request cannot block: it has no body, or all of it is in `buffered`
    int served = 0;         // requests already answered on this connection
};

// Thread-safe: resume() and close() may be called from any thread; the rest from the owner.
class ConnectionGate {
  public:
    // Called on the gate's thread for every connection whose head has arrived; must not block.
    using Dispatch = std::function<void(ReadyConnection)>;

    ConnectionGate(GateLimits limits, Dispatch dispatch);
    ~ConnectionGate();  // stop()
    ConnectionGate(const ConnectionGate&) = delete;
    ConnectionGate& operator=(const ConnectionGate&) = delete;

    // Binds host:port (0 = any free port) with SO_REUSEADDR but never SO_REUSEPORT, so a second server cannot
    // share the port. ErrorCode::conflict when the port is taken.
    Status listen(const std::string& host, int port);
    int port() const;
    void start();  // the accept/poll thread

    // After a response that keeps the connection open: wait for its next request. Bytes already read past the
    // previous request (pipelining) come back in `c.buffered`.
    void resume(ReadyConnection c);
    // After the last response on `fd`: half-close, discard what the client still sends for `linger`, close.
    void close(int fd);
    // Closes the listener and every connection the gate holds; later resume()/close() close at once. Idempotent.
    void stop();

    std::size_t open_connections() const;  // accepted and not yet closed, in the gate or with a worker

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace loradesk::server
