// engine/server transport on real sockets (127.0.0.1, ephemeral port) with a raw-socket client: requests
// round-trip, a second server cannot take the same port (no SO_REUSEPORT), API key, CORS preflight, body
// limit, chunked SSE, and a client that aborts mid-stream cancels its engine request.
#include <QtTest>

#include "scripted_engine.h"
#include "server/http_server.h"
#include "socket_client.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;

namespace {

bool has_header(const std::string& response, const std::string& line) {
    const std::string head = response.substr(0, response.find("\r\n\r\n"));
    return QString::fromStdString(head).contains(QString::fromStdString(line), Qt::CaseInsensitive);
}

}  // namespace

class TstHttpServer : public QObject {
    Q_OBJECT
    ScriptedEngine m_engine;
    std::unique_ptr<Router> m_router;
    std::unique_ptr<HttpServer> m_server;
    int m_port = 0;

  private slots:
    void initTestCase() {
        ServerOptions o;
        o.port = 0;
        o.api_key = "sekret";
        o.max_body_bytes = 4096;
        o.keep_alive_ms = 200;
        o.threads = 16;
        m_router = std::make_unique<Router>(m_engine, o);
        m_server = std::make_unique<HttpServer>(*m_router);
        const Status s = m_server->start();
        QVERIFY2(s.ok(), s.message.c_str());
        m_port = m_server->port();
        QVERIFY(m_port > 0);
        QTRY_VERIFY(m_server->running());
    }
    void cleanupTestCase() {
        m_server->stop();
        QVERIFY(!m_server->running());
        m_server->stop();  // idempotent
    }

    void health_is_public_and_models_need_the_key() {
        std::string r = round_trip(m_port, request_text("GET", "/health"));
        QCOMPARE(status_of(r), 200);
        QVERIFY(r.find(R"({"status":"ok"})") != std::string::npos);
        r = round_trip(m_port, request_text("GET", "/v1/models"));
        QCOMPARE(status_of(r), 401);
        QVERIFY(r.find("invalid_api_key") != std::string::npos);
        r = round_trip(m_port, request_text("GET", "/v1/models", {}, "Authorization: Bearer sekret\r\n"));
        QCOMPARE(status_of(r), 200);
        QVERIFY(r.find("sql-lora") != std::string::npos);
        QVERIFY(has_header(r, "Content-Type: application/json"));
    }
    void second_server_cannot_share_the_port() {
        ServerOptions o;
        o.port = m_port;
        Router router(m_engine, o);
        HttpServer second(router);
        const Status s = second.start();
        QVERIFY(!s.ok());
        QCOMPARE(s.code, ErrorCode::conflict);
        QVERIFY2(s.message.find(std::to_string(m_port)) != std::string::npos, s.message.c_str());
        QVERIFY2(s.message.find("in use") != std::string::npos, s.message.c_str());
        QCOMPARE(status_of(round_trip(m_port, request_text("GET", "/health"))), 200);  // the first still serves
    }
    void cors_preflight() {
        const std::string r =
            round_trip(m_port, request_text("OPTIONS", "/v1/chat/completions", {},
                                            "Origin: http://localhost:5173\r\n"
                                            "Access-Control-Request-Method: POST\r\n"
                                            "Access-Control-Request-Headers: authorization, x-stainless-os\r\n"));
        QCOMPARE(status_of(r), 204);
        QVERIFY(has_header(r, "Access-Control-Allow-Origin: http://localhost:5173"));
        QVERIFY(has_header(r, "Access-Control-Allow-Headers: authorization, x-stainless-os"));
        QVERIFY(has_header(r, "Access-Control-Allow-Methods: GET, POST, OPTIONS"));
    }
    void body_limit_is_413_json() {
        const std::string big(8000, ' ');
        const std::string r =
            round_trip(m_port, request_text("POST", "/v1/completions", big, "Authorization: Bearer sekret\r\n"));
        QCOMPARE(status_of(r), 413);
        QVERIFY2(r.find("request_too_large") != std::string::npos, r.c_str());
    }
    void sse_is_chunked_and_complete() {
        const std::string body = R"({"model":"sql-lora","stream":true,"messages":[{"role":"user","content":"hi"}]})";
        const std::string r =
            round_trip(m_port, request_text("POST", "/v1/chat/completions", body,
                                            "Authorization: Bearer sekret\r\nOrigin: http://127.0.0.1:3000\r\n"));
        QCOMPARE(status_of(r), 200);
        QVERIFY(has_header(r, "Content-Type: text/event-stream"));
        QVERIFY(has_header(r, "Transfer-Encoding: chunked"));
        QVERIFY(has_header(r, "Access-Control-Allow-Origin: http://127.0.0.1:3000"));
        QVERIFY(has_header(r, "x-adapter-tier: gpu"));
        QVERIFY(r.find("data: [DONE]\n\n") != std::string::npos);
        QVERIFY(r.find(R"("content":" world")") != std::string::npos);
    }
    void client_abort_cancels_the_request() {
        m_engine.set_token_delay_ms(20);
        const int before = m_engine.cancelled();
        const std::string body = R"({"stream":true,"messages":[{"role":"user","content":"#long"}]})";
        const int fd = connect_to(m_port);
        QVERIFY(fd >= 0);
        send_all(fd, request_text("POST", "/v1/chat/completions", body, "Authorization: Bearer sekret\r\n"));
        std::string got;
        char buf[4096];
        while (got.find(" w1\"") == std::string::npos) {
            const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
            QVERIFY(n > 0);
            got.append(buf, std::size_t(n));
        }
        ::close(fd);
        QTRY_VERIFY_WITH_TIMEOUT(m_engine.cancelled() > before, 2000);
        m_engine.set_token_delay_ms(0);
        QTRY_COMPARE(m_engine.live_streams(), 0);
    }
    // A non-streamed request whose client leaves is cancelled too: it would otherwise generate to the end
    // (n: 64 once ran on for 28 s and held SIGTERM).
    void client_abort_cancels_a_non_streamed_request() {
        m_engine.set_token_delay_ms(50);  // 40 tokens x 3 choices: about 2 s if nothing cancels them
        const int before = m_engine.cancelled();
        const std::string body = R"({"n":3,"messages":[{"role":"user","content":"#long"}]})";
        const int fd = connect_to(m_port);
        QVERIFY(fd >= 0);
        send_all(fd, request_text("POST", "/v1/chat/completions", body, "Authorization: Bearer sekret\r\n"));
        QTest::qWait(150);  // the request is submitted and generating
        ::close(fd);
        QElapsedTimer timer;
        timer.start();
        QTRY_VERIFY_WITH_TIMEOUT(m_engine.cancelled() >= before + 3, 1500);
        QVERIFY2(timer.elapsed() < 1500, "the abandoned request was not cancelled");
        m_engine.set_token_delay_ms(0);
        QTRY_COMPARE(m_engine.live_streams(), 0);
    }
};

QTEST_GUILESS_MAIN(TstHttpServer)
#include "tst_http_server.moc"
