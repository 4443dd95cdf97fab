// The one place that talks libcurl: a blocking HTTP(S) session for hub/download. libcurl brings proxies
// (HTTPS_PROXY, NO_PROXY), TLS with the system's CAs and redirects. One HttpSession per thread; not
// thread-safe. Transport failures come back as `transport_error` text, never as exceptions, so callers can
// decide to retry.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loradesk::hub {

struct HttpReply {
    long status = 0;                             // 0 when the transfer failed before a status line
    std::map<std::string, std::string> headers;  // of the last response, names lowercase
    std::string body;                            // in-memory requests; error bodies of downloads (first 64 KiB)
    std::string transport_error;                 // empty when the exchange completed
    bool cancelled = false;                      // the cancel flag stopped it

    std::string header(const std::string& lowercase_name) const {
        auto it = headers.find(lowercase_name);
        return it == headers.end() ? std::string() : it->second;
    }
};

struct HttpRequest {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    bool head = false;
    bool follow_redirects = true;
    int64_t range_from = -1;  // >= 0: "Range: bytes=N-"
    bool post = false;        // POST `body` (with a Content-Type among `headers`)
    std::string body;
};

class HttpSession {
  public:
    HttpSession();
    ~HttpSession();
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    // Small bodies (JSON, HEAD): the body is kept in memory.
    HttpReply fetch(const HttpRequest& request);
    // A file body, appended to `out` as it arrives (2xx replies only; other bodies go to reply.body).
    // `on_status(status)` runs once the final status is known, before the first byte is written (a 200 to a
    // ranged request is the caller's cue to truncate); `on_bytes(n)` after each write. `cancel` is polled.
    HttpReply download(const HttpRequest& request, std::FILE* out, const std::function<void(long)>& on_status,
                       const std::function<void(std::size_t)>& on_bytes, const std::atomic<bool>* cancel);

  private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

}  // namespace loradesk::hub
