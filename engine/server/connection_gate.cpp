// The accept loop and the request-head reading of the HTTP server; see connection_gate.h.
#include "server/connection_gate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/log.h"
#include "server/api_error.h"
#include "server/request_head.h"

namespace loradesk::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadChunk = std::size_t(16) << 10;
// A client that keeps sending after its final response is cut off after this much (or `linger`).
constexpr std::size_t kMaxLingerBytes = std::size_t(64) << 20;
constexpr auto kSweepInterval = std::chrono::milliseconds(100);

void set_nonblocking(int fd, bool on) {
    const int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

struct Conn {
    std::string buf;
    std::size_t scanned = 0;  // bytes of buf already searched for the end of the head
    std::size_t lines = 0;    // line ends among them
    std::size_t need = 0;     // once the head is found: bytes to hold before dispatch (head + small body)
    int served = 0;
    bool idle = false;  // kept alive and no byte of the next request yet
    bool lingering = false;
    std::size_t discarded = 0;
    Clock::time_point since;  // when it started waiting here (eviction order)
    Clock::time_point deadline;
};

}  // namespace

struct ConnectionGate::Impl {
    GateLimits limits;
    Dispatch dispatch;
    int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
    int port = 0;
    std::thread thread;
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> open{0};
    std::unordered_map<int, Conn> conns;  // the gate thread's only
    bool listen_paused = false;
    Clock::time_point listen_resume_at;

    std::mutex inbox_mutex;
    bool closed = false;  // stop() has run: hand-backs close at once
    std::vector<ReadyConnection> resumed;
    std::vector<int> closing;

    void run();
    void accept_all();
    void take_inbox();
    void on_readable(int fd, Conn& c);
    bool process(int fd, Conn& c);  // false once the connection has left the gate
    void hand_over(int fd, Conn& c, bool complete);
    void refuse(int fd, Conn& c, const ApiError& e);
    void start_linger(int fd, Conn& c);
    void drop(int fd);
    void expire(Clock::time_point now);
    bool evict_one();
    void watch(int fd, Conn c);
    void close_now(int fd) {
        ::close(fd);
        open.fetch_sub(1);
    }
    void wake() const {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
    }
};

void ConnectionGate::Impl::run() {
    std::vector<epoll_event> events(256);
    auto next_sweep = Clock::now();
    while (!stopping.load()) {
        const int n = ::epoll_wait(epoll_fd, events.data(), int(events.size()), int(kSweepInterval.count()));
        if (n < 0 && errno != EINTR) {
            log::error("server: epoll_wait failed: {}", std::strerror(errno));
            break;
        }
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == listen_fd) {
                accept_all();
            } else if (fd == wake_fd) {
                uint64_t count = 0;
                [[maybe_unused]] ssize_t r = ::read(wake_fd, &count, sizeof count);
                take_inbox();
            } else if (auto it = conns.find(fd); it != conns.end()) {
                on_readable(fd, it->second);
            }
        }
        const auto now = Clock::now();
        if (listen_paused && now >= listen_resume_at) {
            epoll_event ev{EPOLLIN, {.fd = listen_fd}};
            ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
            listen_paused = false;
        }
        if (now >= next_sweep) {
            expire(now);
            next_sweep = now + kSweepInterval;
        }
    }
    for (auto& [fd, c] : conns) close_now(fd);
    conns.clear();
}

void ConnectionGate::Impl::accept_all() {
    for (int round = 0; round < 256; ++round) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (evict_one()) continue;
                // Nothing to give up: leave new connections in the backlog for a moment.
                ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
                listen_paused = true;
                listen_resume_at = Clock::now() + kSweepInterval;
            }
            return;
        }
        open.fetch_add(1);
        if (open.load() > std::size_t(limits.max_connections) && !evict_one()) {
            // Every connection is with a worker: refuse this one rather than queue without bound.
            const std::string r = refusal_response(ApiError(
                503, "unavailable_error",
                fmt::format("the server has {} open connections, its limit; retry shortly", limits.max_connections)));
            ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            close_now(fd);
            continue;
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Conn c;
        c.since = Clock::now();
        c.deadline = c.since + limits.head_timeout;
        watch(fd, std::move(c));
    }
}

void ConnectionGate::Impl::watch(int fd, Conn c) {
    epoll_event ev{EPOLLIN | EPOLLRDHUP, {.fd = fd}};
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return close_now(fd);
    conns.insert_or_assign(fd, std::move(c));
}

void ConnectionGate::Impl::take_inbox() {
    std::vector<ReadyConnection> back;
    std::vector<int> done;
    {
        std::lock_guard lock(inbox_mutex);
        back.swap(resumed);
        done.swap(closing);
    }
    const auto now = Clock::now();
    for (ReadyConnection& r : back) {
        set_nonblocking(r.fd, true);
        Conn c;
        c.buf = std::move(r.buffered);
        c.served = r.served;
        c.idle = c.buf.empty();
        c.since = now;
        c.deadline = now + (c.idle ? limits.idle_timeout : limits.head_timeout);
        const int fd = r.fd;
        watch(fd, std::move(c));
        // A pipelined request may already be complete in the bytes the worker read past the last one.
        if (auto it = conns.find(fd); it != conns.end() && !it->second.buf.empty()) process(fd, it->second);
    }
    for (int fd : done) {
        set_nonblocking(fd, true);
        Conn c;
        c.since = now;
        watch(fd, std::move(c));
        if (auto it = conns.find(fd); it != conns.end()) start_linger(fd, it->second);
    }
}

void ConnectionGate::Impl::on_readable(int fd, Conn& c) {
    char chunk[kReadChunk];
    bool eof = false;
    // A few reads per wake-up: enough for a head, and one busy client cannot starve the others.
    for (int round = 0; round < 4; ++round) {
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n > 0) {
            if (c.lingering) {
                c.discarded += std::size_t(n);
                if (c.discarded > kMaxLingerBytes) return drop(fd);
                continue;
            }
            c.buf.append(chunk, std::size_t(n));
            if (c.idle) {
                c.idle = false;
                c.deadline = Clock::now() + limits.head_timeout;
            }
            if (c.buf.size() > (c.need ? c.need : limits.max_head_bytes)) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        eof = true;  // closed or reset; a request that is complete may still be answered
        break;
    }
    if (c.lingering) {
        if (eof) drop(fd);
        return;
    }
    if (process(fd, c) && eof) drop(fd);
}

bool ConnectionGate::Impl::process(int fd, Conn& c) {
    if (c.need == 0) {
        // Empty lines before a request line are to be ignored (RFC 9112 2.2); some clients send one after a body.
        if (c.scanned == 0)
            while (c.buf.size() >= 2 && c.buf[0] == '\r' && c.buf[1] == '\n') c.buf.erase(0, 2);
        const std::size_t end = c.buf.find("\r\n\r\n", c.scanned > 3 ? c.scanned - 3 : 0);
        const std::size_t scan_to = end == std::string::npos ? c.buf.size() : end + 4;
        c.lines += std::size_t(
            std::count(c.buf.begin() + std::ptrdiff_t(c.scanned), c.buf.begin() + std::ptrdiff_t(scan_to), '\n'));
        c.scanned = scan_to;
        const bool too_big = (end == std::string::npos ? c.buf.size() : scan_to) > limits.max_head_bytes;
        // The request line and the blank line that ends the head are lines too.
        if (too_big || c.lines > std::size_t(limits.max_header_lines) + 2) {
            refuse(fd, c,
                   ApiError(431, "invalid_request_error",
                            fmt::format("the request head is larger than {} bytes or has more than {} header fields; "
                                        "send fewer or shorter headers",
                                        limits.max_head_bytes, limits.max_header_lines),
                            {}, "request_header_fields_too_large"));
            return false;
        }
        if (end == std::string::npos) return true;
        const Framing f = framing_of(std::string_view(c.buf).substr(0, scan_to));
        if (f.has_body && !(f.sized && f.length <= limits.prefetch_body_bytes && !f.expect_continue)) {
            hand_over(fd, c, false);  // a large, chunked or 100-continue body is read by the worker
            return false;
        }
        c.need = scan_to + (f.has_body ? f.length : 0);
    }
    if (c.buf.size() < c.need) return true;
    hand_over(fd, c, true);
    return false;
}

void ConnectionGate::Impl::hand_over(int fd, Conn& c, bool complete) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    set_nonblocking(fd, false);
    ReadyConnection r{fd, std::move(c.buf), complete, c.served};
    conns.erase(fd);
    dispatch(std::move(r));
}

void ConnectionGate::Impl::refuse(int fd, Conn& c, const ApiError& e) {
    const std::string r = refusal_response(e);
    ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    start_linger(fd, c);
}

void ConnectionGate::Impl::start_linger(int fd, Conn& c) {
    // Closing with unread input makes the kernel answer with a reset, which can destroy the response before
    // the client reads it. Half-close, and read until the client closes too or the time is up.
    ::shutdown(fd, SHUT_WR);
    c.lingering = true;
    c.buf = std::string();
    c.deadline = Clock::now() + limits.linger;
}

void ConnectionGate::Impl::drop(int fd) {
    conns.erase(fd);
    close_now(fd);  // also leaves the epoll set
}

void ConnectionGate::Impl::expire(Clock::time_point now) {
    std::vector<int> due;
    for (const auto& [fd, c] : conns)
        if (c.deadline <= now) due.push_back(fd);
    for (int fd : due) {
        Conn& c = conns.at(fd);
        if (c.lingering || c.buf.empty()) {
            drop(fd);
            continue;
        }
        refuse(fd, c,
               ApiError(408, "invalid_request_error",
                        fmt::format("the request did not arrive within {} ms; send the request head and body promptly",
                                    limits.head_timeout.count()),
                        {}, "request_timeout"));
    }
}

bool ConnectionGate::Impl::evict_one() {
    // Lingering connections first (their response is out), then whoever has waited longest: a real client sends
    // its head at once, so the oldest waiting connection is idle or trickling.
    auto victim = conns.end();
    for (auto it = conns.begin(); it != conns.end(); ++it) {
        if (victim == conns.end() || (it->second.lingering && !victim->second.lingering) ||
            (it->second.lingering == victim->second.lingering && it->second.since < victim->second.since))
            victim = it;
    }
    if (victim == conns.end()) return false;
    drop(victim->first);
    return true;
}

ConnectionGate::ConnectionGate(GateLimits limits, Dispatch dispatch) : m_impl(std::make_unique<Impl>()) {
    m_impl->limits = limits;
    m_impl->dispatch = std::move(dispatch);
}

ConnectionGate::~ConnectionGate() { stop(); }

Status ConnectionGate::listen(const std::string& host, int port) {
    auto made = listen_socket(host, port, m_impl->limits.backlog);
    if (!made.ok()) return made.status();
    m_impl->listen_fd = made->fd;
    m_impl->port = made->port;
    return Status::success();
}

int ConnectionGate::port() const { return m_impl->port; }

void ConnectionGate::start() {
    Impl& d = *m_impl;
    d.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    d.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (int fd : {d.listen_fd, d.wake_fd}) {
        epoll_event ev{EPOLLIN, {.fd = fd}};
        ::epoll_ctl(d.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    }
    d.thread = std::thread([&d] { d.run(); });
}

void ConnectionGate::resume(ReadyConnection c) {
    Impl& d = *m_impl;
    {
        std::lock_guard lock(d.inbox_mutex);
        if (!d.closed) {
            d.resumed.push_back(std::move(c));
            d.wake();
            return;
        }
    }
    d.close_now(c.fd);
}

void ConnectionGate::close(int fd) {
    Impl& d = *m_impl;
    {
        std::lock_guard lock(d.inbox_mutex);
        if (!d.closed) {
            d.closing.push_back(fd);
            d.wake();
            return;
        }
    }
    d.close_now(fd);
}

void ConnectionGate::stop() {
    Impl& d = *m_impl;
    d.stopping = true;
    if (d.thread.joinable()) {
        d.wake();
        d.thread.join();
    }
    std::lock_guard lock(d.inbox_mutex);
    if (d.closed) return;
    d.closed = true;
    for (ReadyConnection& r : d.resumed) d.close_now(r.fd);
    for (int fd : d.closing) d.close_now(fd);
    d.resumed.clear();
    d.closing.clear();
    for (int* fd : {&d.listen_fd, &d.epoll_fd, &d.wake_fd})
        if (*fd >= 0) ::close(std::exchange(*fd, -1));
}

std::size_t ConnectionGate::open_connections() const { return m_impl->open.load(); }

}  // namespace loradesk::server
