// Request-head framing, refusal responses and the listening socket of the connection gate; see request_head.h.
#include "server/request_head.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/http_types.h"

namespace loradesk::server {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 408:
            return "Request Timeout";
        case 431:
            return "Request Header Fields Too Large";
        default:
            return "Service Unavailable";
    }
}

}  // namespace

Framing framing_of(std::string_view head) {
    Framing f;
    bool transfer_encoding = false;
    for (std::size_t pos = head.find("\r\n"); pos != std::string_view::npos;) {
        const std::size_t start = pos + 2, end = head.find("\r\n", start);
        if (end == std::string_view::npos || end == start) break;  // the blank line ends the head
        const std::string_view line = head.substr(start, end - start);
        pos = end;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string name = to_lower(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        if (name == "content-length") {
            bool digits = !value.empty() && value.size() <= 18;
            std::size_t n = 0;
            for (char ch : value) {
                digits = digits && ch >= '0' && ch <= '9';
                n = n * 10 + std::size_t(ch - '0');
            }
            f.sized = digits;
            f.length = digits ? n : 0;
            f.has_body = f.has_body || !digits || n > 0;
        } else if (name == "transfer-encoding") {
            transfer_encoding = true;
        } else if (name == "expect") {
            f.expect_continue = to_lower(value).find("100-continue") != std::string::npos;
        }
    }
    if (transfer_encoding) f.has_body = true, f.sized = false;
    return f;
}

// Small enough for any socket send buffer: the gate sends it with one non-blocking write.
std::string refusal_response(const ApiError& e) {
    const std::string body = e.body().dump();
    return fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        e.status, reason_phrase(e.status), body.size(), body);
}

Result<ListenSocket> listen_socket(const std::string& host, int port, int backlog) {
    ListenSocket out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0)
        return Status::failure(ErrorCode::invalid_argument,
                               fmt::format("cannot listen on {}: {}; pass another --host", host, gai_strerror(rc)));
    int err = 0;
    for (addrinfo* a = found; a && out.fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        // SO_REUSEADDR lets a restart bind while old connections sit in TIME_WAIT. Never SO_REUSEPORT: it would
        // let a second process bind the same port and silently take half of the connections.
        int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
            out.fd = fd;
        } else {
            err = errno;
            ::close(fd);
        }
    }
    ::freeaddrinfo(found);
    if (out.fd < 0 && err == EADDRINUSE)
        return Status::failure(ErrorCode::conflict,
                               fmt::format("cannot listen on {}:{}: the port is in use (is another loradesk running?); "
                                           "pick another --port",
                                           host, port));
    if (out.fd < 0)
        return Status::failure(ErrorCode::io, fmt::format("cannot listen on {}:{}: {}; check --host and --port", host,
                                                          port, std::strerror(err)));
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(out.fd, reinterpret_cast<sockaddr*>(&addr), &len);
    out.port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    return out;
}

}  // namespace loradesk::server
