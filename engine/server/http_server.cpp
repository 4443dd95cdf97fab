// cpp-httplib transport for the Router. The only file that includes httplib.h.
#include "server/http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "core/log.h"
#include "server/api_error.h"

namespace loradesk::server {

namespace {

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

HttpRequest convert(const httplib::Request& req) {
    HttpRequest out;
    out.method = req.method;
    out.path = req.path;
    for (const auto& [name, value] : req.headers) out.headers[to_lower(name)] = value;
    out.body = req.body;
    out.remote_addr = req.remote_addr;
    return out;
}

}  // namespace

struct HttpServer::Impl {
    Router& router;
    httplib::Server server;
    std::thread thread;
    std::atomic<bool> stopping{false};
    int port = 0;

    explicit Impl(Router& r) : router(r) {}

    void handle(const httplib::Request& req, httplib::Response& res) {
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

    // Errors httplib raises itself (body over the limit, bad request line) get our JSON shape.
    void on_error(const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        ApiError e = res.status == 413
                         ? ApiError(413, "invalid_request_error",
                                    fmt::format("the request body is larger than the limit of {} bytes; send less",
                                                router.options().max_body_bytes),
                                    {}, "request_too_large")
                         : ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                                    fmt::format("HTTP {} for {} {}", res.status, req.method, req.path));
        res.set_content(e.body().dump(), "application/json");
        const std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && router.origin_allowed(origin)) res.set_header("Access-Control-Allow-Origin", origin);
    }
};

HttpServer::HttpServer(Router& router) : m_impl(std::make_unique<Impl>(router)) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
    Impl& d = *m_impl;
    const ServerOptions& o = d.router.options();
    const int threads = std::max(4, o.threads);
    d.server.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
    // httplib sets SO_REUSEPORT by default, which lets a second process bind the same port and silently take
    // half the connections. Only SO_REUSEADDR (fast restarts after TIME_WAIT) is wanted.
    d.server.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    d.server.set_tcp_nodelay(true);
    d.server.set_read_timeout(o.read_timeout_s, 0);
    d.server.set_write_timeout(o.write_timeout_s, 0);
    d.server.set_keep_alive_max_count(1000);
    d.server.set_keep_alive_timeout(5);  // an idle keep-alive connection holds a worker thread
    d.server.set_payload_max_length(o.max_body_bytes);
    auto handler = [&d](const httplib::Request& req, httplib::Response& res) { d.handle(req, res); };
    d.server.Get(".*", handler);
    d.server.Post(".*", handler);
    d.server.Put(".*", handler);
    d.server.Delete(".*", handler);
    d.server.Options(".*", handler);
    d.server.set_error_handler([&d](const httplib::Request& req, httplib::Response& res) { d.on_error(req, res); });
    d.server.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content(R"({"error":{"message":"internal error","type":"server_error","param":null,"code":500}})",
                        "application/json");
    });
    if (o.port == 0) {
        d.port = d.server.bind_to_any_port(o.host);
        if (d.port <= 0) return Status::failure(ErrorCode::io, fmt::format("cannot listen on {}: no free port", o.host));
    } else {
        if (!d.server.bind_to_port(o.host, o.port))
            return Status::failure(ErrorCode::conflict,
                                   fmt::format("cannot listen on {}:{}: the port is in use (is another loradesk "
                                               "running?) or the address is not available; pick another --port",
                                               o.host, o.port));
        d.port = o.port;
    }
    d.thread = std::thread([&d] { d.server.listen_after_bind(); });
    log::info("server: listening on http://{}:{}", o.host, d.port);
    return Status::success();
}

int HttpServer::port() const { return m_impl->port; }

bool HttpServer::running() const { return m_impl->thread.joinable() && m_impl->server.is_running(); }

void HttpServer::stop() {
    Impl& d = *m_impl;
    if (!d.thread.joinable()) return;
    d.stopping = true;  // live streams see failed writes and cancel their engine requests
    d.server.stop();
    d.thread.join();
    log::info("server: stopped");
}

}  // namespace loradesk::server
