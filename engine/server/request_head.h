// The little HTTP that the connection gate speaks itself, below cpp-httplib: opening the listening socket, how a
// request head announces its body, and the complete responses for refusals the gate answers on its own (408, 431,
// 503). Pure functions apart from listen_socket().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"
#include "server/api_error.h"

namespace loradesk::server {

// What the gate needs to know of a request's framing: whether its body can be waited for in the gate.
struct Framing {
    bool has_body = false;
    bool sized = false;  // a valid Content-Length and no Transfer-Encoding
    std::size_t length = 0;
    bool expect_continue = false;  // the client sends its body only after "100 Continue"
};

// Reads the framing headers of a complete head (request line + headers + blank line). A rough reading only:
// cpp-httplib parses the head again and answers malformed or ambiguous framing itself.
Framing framing_of(std::string_view head);

// A whole HTTP/1.1 response carrying `e` as JSON, with Connection: close.
std::string refusal_response(const ApiError& e);

struct ListenSocket {
    int fd = -1;  // non-blocking, close-on-exec
    int port = 0;
};

// Binds host:port (0 = any free port) and listens. SO_REUSEADDR but never SO_REUSEPORT, so a second server cannot
// share the port: ErrorCode::conflict when it is taken.
Result<ListenSocket> listen_socket(const std::string& host, int port, int backlog);

}  // namespace loradesk::server
