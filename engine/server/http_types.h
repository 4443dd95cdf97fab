// Our own HTTP request/response types. Route handlers see only these, so they are unit-testable
// without sockets; http_server.cpp (the one file that includes cpp-httplib) converts at the edge.
// Header names are stored lower-case; a response either has a body or a streaming producer.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loradesk::server {

struct HttpRequest {
    std::string method;                          // GET, POST, OPTIONS, ...
    std::string path;                            // without the query string
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
    std::string remote_addr;
    // True once the client has closed its connection (set by the transport; unset in tests without sockets).
    // A non-streamed generation checks it while it waits, so an abandoned request stops generating.
    std::function<bool()> client_gone;

    // Value of a header (name in any case), or "" when absent.
    std::string header(std::string_view name) const;
};

// Where a streaming response writes. write() returns false once the client is gone; the producer must
// then stop at once (and cancel the engine requests it drives).
class StreamSink {
  public:
    virtual ~StreamSink() = default;
    virtual bool write(std::string_view data) = 0;
};

struct HttpResponse {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;  // in order; names as sent
    std::string content_type = "application/json";
    std::string body;
    // When set, the body is produced incrementally (chunked) by calling this once on a worker thread.
    std::function<void(StreamSink&)> stream;

    void set_header(std::string name, std::string value);
    // Value of a response header (name in any case), or "" when absent.
    std::string header(std::string_view name) const;
};

std::string to_lower(std::string_view text);

// Whether a bind address only accepts connections from this machine (127.0.0.0/8, ::1, localhost).
bool is_loopback_host(std::string_view host);

}  // namespace loradesk::server
