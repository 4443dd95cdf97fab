// A raw-socket HTTP client for the transport tests: requests are written byte for byte (malformed, partial,
// trickled or huge ones included) and responses read back as text.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace loradesk::testing {

inline int connect_to(int port, int receive_timeout_s = 5) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{receive_timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

inline bool send_all(int fd, const std::string& data) {
    for (std::size_t off = 0; off < data.size();) {
        const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return false;
        off += std::size_t(n);
    }
    return true;
}

inline std::string request_text(const std::string& method, const std::string& path, const std::string& body = {},
                                const std::string& extra_headers = {}) {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers;
    if (!body.empty() || method == "POST")
        r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

// Reads until the server closes (or the receive timeout).
inline std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, std::size_t(n));
    return out;
}

// Sends one request and reads the whole response (the server closes: Connection: close).
inline std::string round_trip(int port, const std::string& request) {
    const int fd = connect_to(port);
    if (fd < 0) return {};
    send_all(fd, request);
    std::string out = read_all(fd);
    ::close(fd);
    return out;
}

inline bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

inline int status_of(const std::string& response) { return response.size() > 12 ? std::atoi(response.c_str() + 9) : 0; }

}  // namespace loradesk::testing
