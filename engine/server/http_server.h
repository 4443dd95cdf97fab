// The socket transport: a connection gate (epoll, request heads), a worker pool and cpp-httplib (hidden behind a
// pimpl; http_server.cpp is the only file that includes httplib.h) that feed every request to a Router. Binds
// 127.0.0.1 by default, refuses to share its port with another process, bounds what a client can make it read or
// hold (see docs/architecture.md, "The HTTP transport"), streams SSE responses chunked and cancels them when the
// client goes away.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "server/router.h"

namespace loradesk::server {

class HttpServer {
  public:
    explicit HttpServer(Router& router);  // the router must outlive the server
    ~HttpServer();                        // stops and joins
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port from the router's options (port 0 = any free port) and starts the listening thread.
    // Fails with ErrorCode::conflict and a clear message when the port is taken (also by another loradesk).
    Status start();
    int port() const;  // the bound port, after start()
    // Lets requests in flight finish for up to `grace`, then stops accepting, ends the remaining streams (their
    // writes fail) and joins. Idempotent.
    void stop(std::chrono::milliseconds grace = {});
    bool running() const;
    int in_flight() const;  // requests being read, handled or streamed now

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace loradesk::server
