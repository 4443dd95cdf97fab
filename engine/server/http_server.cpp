// cpp-httplib behind the connection gate: parses each request whose head has arrived, reads its body within the
// limits, routes it to the Router and writes the response. The only file that includes httplib.h.
#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>

#include "core/log.h"
#include "server/api_error.h"
#include "server/connection_gate.h"
#include "server/worker_pool.h"

static_assert(std::string_view(CPPHTTPLIB_VERSION) == "0.53.1",
              "http_server.cpp uses cpp-httplib internals (Server::process_request, detail::SocketStream); check them "
              "against the new release, then update this and third_party/cpp-httplib/README.md");

namespace loradesk::server {

namespace {

constexpr int kMaxRequestsPerConnection = 1000;

// Adapts httplib's DataSink; reports the client gone (or the server stopping) as a failed write.
class ChunkSink : public StreamSink {
  public:
    ChunkSink(httplib::DataSink& sink, const std::atomic<bool>& stopping) : m_sink(sink), m_stopping(stopping) {}
    bool write(std::string_view data) override {
        if (m_stopping.load() || m_failed) return false;
        if (!m_sink.write(data.data(), data.size())) m_failed = true;
        return !m_failed;
    }
    bool failed() const { return m_failed; }

  private:
    httplib::DataSink& m_sink;
    const std::atomic<bool>& m_stopping;
    bool m_failed = false;
};

// Takes the body rather than copying it (up to max_body_bytes): httplib hands handlers a const Request, but it is
// process_request()'s own local, and nothing reads its body after the handler.
HttpRequest convert(const httplib::Request& req) {
    HttpRequest out;
    out.method = req.method;
    out.path = req.path;
    for (const auto& [name, value] : req.headers) out.headers[to_lower(name)] = value;
    out.body = std::move(const_cast<httplib::Request&>(req).body);
    out.remote_addr = req.remote_addr;
    out.client_gone = req.is_connection_closed;
    return out;
}

// httplib::Server with its per-request entry point opened: the gate owns the sockets, so requests are served one
// at a time through process_request() instead of httplib's own accept loop and thread pool.
class GatedServer : public httplib::Server {
  public:
    bool serve_one(httplib::Stream& strm, bool last, bool& close) {
        std::string remote, local;
        int remote_port = 0, local_port = 0;
        strm.get_remote_ip_and_port(remote, remote_port);
        strm.get_local_ip_and_port(local, local_port);
        return process_request(strm, remote, remote_port, local, local_port, last, close, nullptr);
    }
    // httplib ends streamed responses once this is INVALID_SOCKET (its notion of "shutting down").
    void set_listening(socket_t fd) { svr_sock_ = fd; }
};

// The bytes the gate already read, then the socket. Reading the rest of a request (its body) has a total deadline
// as well as the per-read timeout, so a client trickling its body cannot hold a worker longer than that.
class GateStream final : public httplib::Stream {
  public:
    GateStream(int fd, std::string prefix, int read_timeout_s, int write_timeout_s)
        : m_prefix(std::move(prefix)),
          m_socket(fd, read_timeout_s, 0, write_timeout_s, 0, time_t(read_timeout_s) * 1000,
                   std::chrono::steady_clock::now()) {}

    bool is_readable() const override { return has_prefix() || m_socket.is_readable(); }
    bool wait_readable() const override { return has_prefix() || m_socket.wait_readable(); }
    bool wait_writable() const override { return m_socket.wait_writable(); }
    bool is_peer_alive() const override { return m_socket.is_peer_alive(); }
    ssize_t read(char* ptr, size_t size) override {
        if (!has_prefix()) return m_socket.read(ptr, size);
        size = std::min(size, m_prefix.size() - m_offset);
        std::memcpy(ptr, m_prefix.data() + m_offset, size);
        m_offset += size;
        return ssize_t(size);
    }
    ssize_t write(const char* ptr, size_t size) override { return m_socket.write(ptr, size); }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        m_socket.get_remote_ip_and_port(ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override { m_socket.get_local_ip_and_port(ip, port); }
    socket_t socket() const override { return m_socket.socket(); }
    time_t duration() const override { return m_socket.duration(); }
    void set_read_timeout(time_t sec, time_t usec) override { m_socket.set_read_timeout(sec, usec); }
    const char* buffered_data(size_t& size) const override {
        if (!has_prefix()) return m_socket.buffered_data(size);
        size = m_prefix.size() - m_offset;
        return m_prefix.data() + m_offset;
    }
    void consume_buffered(size_t size) override {
        if (has_prefix())
            m_offset += size;
        else
            m_socket.consume_buffered(size);
    }
    // What was read past the request just served: the start of the next one, for the gate.
    std::string unread() {
        std::string rest = m_prefix.substr(m_offset);
        size_t n = 0;
        if (const char* p = m_socket.buffered_data(n)) rest.append(p, n);
        return rest;
    }

  private:
    bool has_prefix() const { return m_offset < m_prefix.size(); }
    std::string m_prefix;
    size_t m_offset = 0;
    httplib::detail::SocketStream m_socket;
};

// The gate's limits from the options, with the connection cap kept well inside the descriptor limit (the engine
// needs descriptors of its own for weights, adapters and the catalog).
GateLimits gate_limits(const ServerOptions& o) {
    GateLimits g;
    g.backlog = o.listen_backlog;
    g.max_connections = o.max_connections;
    rlimit files{};
    // Many systems start processes with a soft limit of 1,024 descriptors and a far higher hard one: a server
    // holding one socket per live stream takes what it is allowed.
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < files.rlim_max) {
        rlimit raised = files;
        raised.rlim_cur = files.rlim_max == RLIM_INFINITY ? rlim_t(65536) : std::min<rlim_t>(files.rlim_max, 65536);
        if (raised.rlim_cur > files.rlim_cur && ::setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
    }
    if (files.rlim_cur != 0 && files.rlim_cur != RLIM_INFINITY && rlim_t(g.max_connections) > files.rlim_cur / 2) {
        g.max_connections = int(std::max<rlim_t>(16, files.rlim_cur / 2));
        log::info("server: at most {} connections (half the open-file limit of {}; raise it with ulimit -n)",
                  g.max_connections, files.rlim_cur);
    }
    g.max_head_bytes = o.max_header_bytes;
    g.head_timeout = std::chrono::seconds(o.header_timeout_s);
    g.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
    return g;
}

}  // namespace

struct HttpServer::Impl {
    Router& router;
    GatedServer server;
    std::unique_ptr<ConnectionGate> gate;
    std::unique_ptr<WorkerPool> pool;
    std::atomic<bool> stopping{false};
    std::atomic<bool> running{false};
    std::atomic<int> serving{0};  // requests between their head and their last byte (streams included)

    explicit Impl(Router& r) : router(r) {}

    bool serve(ReadyConnection& c) {
        struct Serving {
            std::atomic<int>& n;
            explicit Serving(std::atomic<int>& count) : n(count) { ++n; }
            ~Serving() { --n; }
        } serving_scope(serving);
        const ServerOptions& o = router.options();
        GateStream strm(c.fd, std::move(c.buffered), o.read_timeout_s, o.write_timeout_s);
        const bool last = c.served + 1 >= kMaxRequestsPerConnection || stopping.load();
        bool closed = false;
        const bool ok = server.serve_one(strm, last, closed);
        c.buffered = strm.unread();
        ++c.served;
        release_memory_after_large_request();
        return ok && !closed && !last && !stopping.load();
    }

    // A large body is parsed into many small heap blocks spread over the worker threads' malloc arenas; glibc
    // keeps them all after the request ends (RSS stayed at 7.9 GB idle after a few big requests). Giving the free
    // pages back costs a few milliseconds, so it is done only after bodies of a megabyte or more.
    static constexpr std::size_t kTrimAfterBodyBytes = std::size_t(1) << 20;
    static inline thread_local bool t_large_body = false;
    static void release_memory_after_large_request() {
        if (!t_large_body) return;
        t_large_body = false;
#if defined(__GLIBC__)
        ::malloc_trim(0);
#endif
    }

    void handle(const httplib::Request& req, httplib::Response& res) {
        WorkerPool::body_read();
        if (req.body.size() >= kTrimAfterBodyBytes) t_large_body = true;
        HttpResponse r = router.handle(convert(req));
        res.status = r.status;
        for (const auto& [name, value] : r.headers) res.set_header(name, value);
        if (r.stream) {
            auto producer = std::move(r.stream);
            res.set_chunked_content_provider(r.content_type, [this, producer](size_t, httplib::DataSink& sink) {
                ChunkSink chunks(sink, stopping);
                producer(chunks);
                if (chunks.failed()) return false;  // abort the connection: the client is gone
                sink.done();
                return true;
            });
        } else if (!r.body.empty() || r.status != 204) {
            res.set_content(r.body, r.content_type.empty() ? "application/json" : r.content_type);
        }
    }

    // Refusals decided from the head alone, before a byte of the body is read.
    std::optional<ApiError> refuse_before_body(const httplib::Request& req) const {
        const std::string encoding = to_lower(req.get_header_value("Content-Encoding"));
        if (!encoding.empty() && encoding != "identity")
            return ApiError(415, "invalid_request_error",
                            fmt::format("request bodies must not be compressed (Content-Encoding: {}); send the JSON "
                                        "uncompressed",
                                        req.get_header_value("Content-Encoding")),
                            {}, "unsupported_media_type");
        const std::size_t limit = router.options().max_body_bytes;
        if (req.get_header_value_u64("Content-Length") > limit) return body_too_large();
        return std::nullopt;
    }

    ApiError body_too_large() const {
        return ApiError(413, "invalid_request_error",
                        fmt::format("the request body is larger than the limit of {} bytes; send less",
                                    router.options().max_body_bytes),
                        {}, "request_too_large");
    }

    void set_error(const httplib::Request& req, httplib::Response& res, const ApiError& e) const {
        res.status = e.status;
        res.set_content(e.body().dump(), "application/json");
        res.set_header("Connection", "close");  // the body, if any, is not read: nothing else may follow
        const std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && router.origin_allowed(origin)) res.set_header("Access-Control-Allow-Origin", origin);
    }

    // Errors httplib raises itself (body over the limit, malformed request line or headers) get our JSON shape.
    void on_error(const httplib::Request& req, httplib::Response& res) const {
        if (!res.body.empty()) return;
        const int status = res.status;
        std::string message = fmt::format("HTTP {} for {} {}", status, req.method, req.path);
        if (status == 400)
            message =
                "malformed HTTP request: check the request line, the headers (each at most 8 KiB) "
                "and the body framing (Content-Length or chunked, not both)";
        if (status == 404) message = fmt::format("no route for {} {}; see docs/api.md", req.method, req.path);
        if (status == 414) message = "the request target is longer than 8 KiB";
        ApiError e = status == 413
                         ? body_too_large()
                         : ApiError(status, status >= 500 ? "server_error" : "invalid_request_error", message);
        set_error(req, res, e);
    }

    void install_handlers() {
        auto handler = [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); };
        server.Get(".*", handler);
        server.Post(".*", handler);
        server.Put(".*", handler);
        server.Delete(".*", handler);
        server.Options(".*", handler);
        server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            auto refusal = refuse_before_body(req);
            if (refusal) set_error(req, res, *refusal);
            // The body is appended piece by piece: without room made up front, the string doubles its way up and
            // a 30 MB body briefly holds 48 MB. The length is known and within the limit here (checked above).
            // httplib hands this hook a const Request, but it is process_request()'s own local, as in convert().
            // A chunked body's size is unknown: room for the whole limit is reserved, which costs address space
            // only (pages are touched as bytes arrive), where doubling cost a copy (72 MB for a 32 MB limit).
            auto& body = const_cast<httplib::Request&>(req).body;
            if (!refusal && req.has_header("Content-Length"))
                body.reserve(req.get_header_value_u64("Content-Length"));
            else if (!refusal && httplib::detail::is_chunked_transfer_encoding(req.headers))
                body.reserve(router.options().max_body_bytes);
            return refusal ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
        });
        // "Expect: 100-continue" clients wait for our go-ahead: refuse before they send the body at all.
        server.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
            auto refusal = refuse_before_body(req);
            if (!refusal) return 100;
            set_error(req, res, *refusal);
            return refusal->status;
        });
        server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) { on_error(req, res); });
        server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            res.status = 500;
            res.set_content(R"({"error":{"message":"internal error","type":"server_error","param":null,"code":500}})",
                            "application/json");
        });
    }
};

HttpServer::HttpServer(Router& router) : m_impl(std::make_unique<Impl>(router)) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
    Impl& d = *m_impl;
    const ServerOptions& o = d.router.options();
    d.server.set_payload_max_length(o.max_body_bytes);
    d.server.set_read_timeout(o.read_timeout_s, 0);
    d.server.set_write_timeout(o.write_timeout_s, 0);
    // Only what httplib writes into Keep-Alive response headers: the gate enforces both.
    d.server.set_keep_alive_timeout(o.idle_timeout_s);
    d.server.set_keep_alive_max_count(kMaxRequestsPerConnection);
    d.install_handlers();
    d.gate = std::make_unique<ConnectionGate>(gate_limits(o), [&d](ReadyConnection c) { d.pool->push(std::move(c)); });
    if (Status s = d.gate->listen(o.host, o.port); !s.ok()) return s;
    const int threads = std::max(4, o.threads);
    d.pool =
        std::make_unique<WorkerPool>(*d.gate, threads, threads / 2, [&d](ReadyConnection& c) { return d.serve(c); });
    d.server.set_listening(socket_t(1));  // any valid descriptor: "not shutting down"
    d.gate->start();
    d.running = true;
    log::info("server: listening on http://{}:{}", o.host, d.gate->port());
    if (!o.api_key.empty() || is_loopback_host(o.host)) return Status::success();
    log::warn(
        "server: listening on {} without an API key: anyone who can reach this machine on port {} can use the "
        "model and load adapters; set --api-key-file FILE (or LORADESK_API_KEY), or bind 127.0.0.1",
        o.host, d.gate->port());
    return Status::success();
}

int HttpServer::port() const { return m_impl->gate ? m_impl->gate->port() : 0; }

bool HttpServer::running() const { return m_impl->running.load(); }

int HttpServer::in_flight() const { return m_impl->serving.load(); }

void HttpServer::stop(std::chrono::milliseconds grace) {
    Impl& d = *m_impl;
    if (!d.running.exchange(false)) return;
    // Requests in flight may finish first (a stream whose engine request was cancelled writes its error event and
    // [DONE]); new ones are still answered meanwhile, by the router (503 while it is unavailable).
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (d.serving.load() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    d.stopping = true;  // live streams see failed writes and cancel their engine requests
    d.server.set_listening(INVALID_SOCKET);
    d.gate->stop();
    d.pool->stop();
    log::info("server: stopped");
}

}  // namespace loradesk::server
