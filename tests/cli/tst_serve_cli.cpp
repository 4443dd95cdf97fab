// `loradeskd serve` options: where the API key comes from (--api-key, --api-key-file, LORADESK_API_KEY),
// --tool-call-parser's names, and as a process: the key from the environment is enforced, a damaged catalog names
// --start-fresh and --start-fresh gets past it, and binding a non-loopback address without a key logs a warning.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "engine_cli.h"
#include "server/socket_client.h"

using namespace loradesk;
using namespace loradesk::testing;

namespace {

cli::ServeOptions parse(const std::vector<std::string>& argv) {
    return cli::serve_options_from_args(cli::Args(argv, cli::engine_option_specs()));
}

std::string write_file(const QTemporaryDir& dir, const char* name, const std::string& text) {
    const std::string path = (dir.path() + "/" + name).toStdString();
    std::ofstream(path) << text;
    return path;
}

// A `loradeskd serve` on an ephemeral port; stopped with SIGTERM by stop().
struct Served {
    QProcess process;
    QByteArray output;
    int port = 0;

    bool start(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.setProcessEnvironment(env);
        process.start(LORADESKD, QStringList{"serve", "--port", "0"} + args);
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 60000 && process.state() != QProcess::NotRunning) {
            process.waitForReadyRead(200);
            output += process.readAll();
            const int at = output.indexOf("loradeskd: listening on http://");
            if (at < 0) continue;
            const int colon = output.indexOf(':', output.indexOf("//", at) + 2);
            port = output.mid(colon + 1, 6).toInt();
            return port > 0;
        }
        output += process.readAll();
        return false;
    }
    int stop() {
        process.terminate();
        process.waitForFinished(15000);
        output += process.readAll();
        return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    }
};

}  // namespace

class TstServeCli : public QObject {
    Q_OBJECT

  private slots:
    void init() { ::unsetenv("LORADESK_API_KEY"); }

    void api_key_sources() {
        QTemporaryDir dir;
        QCOMPARE(parse({}).api_key, std::string());
        QCOMPARE(parse({"--api-key", "on-the-command-line"}).api_key, std::string("on-the-command-line"));
        const std::string file = write_file(dir, "key", "  from-a-file \r\nsecond line ignored\n");
        QCOMPARE(parse({"--api-key-file", file}).api_key, std::string("from-a-file"));
        ::setenv("LORADESK_API_KEY", "from-the-environment", 1);
        QCOMPARE(parse({}).api_key, std::string("from-the-environment"));
        QCOMPARE(parse({"--api-key-file", file}).api_key, std::string("from-a-file"));  // a flag wins
        QCOMPARE(parse({"--api-key", "x"}).api_key, std::string("x"));
    }
    void api_key_errors_data() {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("both") << "--api-key k --api-key-file FILE"
                              << "not both";
        QTest::newRow("missing file") << "--api-key-file MISSING"
                                      << "cannot read";
        QTest::newRow("empty file") << "--api-key-file EMPTY"
                                    << "no key";
    }
    void api_key_errors() {
        QFETCH(QString, args);
        QFETCH(QString, message);
        QTemporaryDir dir;
        std::vector<std::string> argv;
        for (const QString& a : args.split(' ')) {
            if (a == "FILE")
                argv.push_back(write_file(dir, "key", "k\n"));
            else if (a == "EMPTY")
                argv.push_back(write_file(dir, "empty", "\n\n"));
            else if (a == "MISSING")
                argv.push_back((dir.path() + "/missing").toStdString());
            else
                argv.push_back(a.toStdString());
        }
        try {
            parse(argv);
            QFAIL("accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(message.toStdString()) != std::string::npos, e.what());
        }
    }
    void tool_call_parser_names() {
        QCOMPARE(parse({}).tool_call_parser, std::string("auto"));
        for (const char* name : {"auto", "hermes", "llama3_json", "mistral", "qwen3_coder"})
            QCOMPARE(parse({"--tool-call-parser", name}).tool_call_parser, std::string(name));
        try {
            parse({"--tool-call-parser", "pythonic"});
            QFAIL("accepted");
        } catch (const Error& e) {
            // The message lists what is valid.
            QVERIFY2(std::string(e.what()).find("auto, hermes, llama3_json, mistral, qwen3_coder") != std::string::npos,
                     e.what());
            QVERIFY2(std::string(e.what()).find("'pythonic'") != std::string::npos, e.what());
        }
    }
    void start_fresh_reaches_the_engine() {
        QVERIFY(!parse({}).engine.catalog_start_fresh);
        QVERIFY(parse({"--start-fresh"}).engine.catalog_start_fresh);
    }
    void fp8_weight_only_reaches_the_engine() {
        QVERIFY(!parse({}).engine.fp8_weight_only);
        QVERIFY(parse({"--fp8-weight-only"}).engine.fp8_weight_only);
    }

#ifdef LORADESKD
    void serve_enforces_the_key_from_the_environment() {
        QTemporaryDir data;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("LORADESK_API_KEY", "env-secret");
        Served s;
        QVERIFY2(s.start({"--data-dir", data.path()}, env), s.output.constData());
        QCOMPARE(status_of(round_trip(s.port, request_text("GET", "/v1/models"))), 401);
        const std::string auth = "Authorization: Bearer env-secret\r\n";
        QCOMPARE(status_of(round_trip(s.port, request_text("GET", "/v1/models", {}, auth))), 200);
        QVERIFY(!s.output.contains("without an API key"));
        QCOMPARE(s.stop(), 0);
    }
    void serve_start_fresh_gets_past_a_damaged_catalog() {
        QTemporaryDir data;
        std::ofstream((data.path() + "/catalog.sqlite3").toStdString()) << std::string(5000, '#');
        Served damaged;
        QVERIFY(!damaged.start({"--data-dir", data.path()}));
        QVERIFY2(damaged.output.contains("--start-fresh"), damaged.output.constData());
        Served fresh;
        // Also bound to every interface without a key: it serves, and says what that means.
        QVERIFY2(fresh.start({"--data-dir", data.path(), "--start-fresh", "--host", "0.0.0.0"}),
                 fresh.output.constData());
        QCOMPARE(status_of(round_trip(fresh.port, request_text("GET", "/health"))), 200);
        QCOMPARE(QDir(data.path()).entryList({"catalog.sqlite3.corrupt-*"}).size(), 1);
        QVERIFY2(fresh.output.contains("without an API key"), fresh.output.constData());
        QCOMPARE(fresh.stop(), 0);
    }
    // A stop signal drains for --shutdown-timeout, then cancels: the open stream ends and the process exits in
    // time (an abandoned generation used to hold SIGTERM until it finished).
    void stop_signal_drains_then_cancels() {
        QTemporaryDir data;
        Served s;
        QVERIFY2(s.start({"--data-dir", data.path(), "--shutdown-timeout", "1", "--threads", "1"}),
                 s.output.constData());
        const int fd = connect_to(s.port, 30);
        const std::string body =
            R"({"prompt": "Once upon a time", "n": 32, "max_tokens": 1000, "ignore_eos": true, "stream": true})";
        QVERIFY(send_all(fd, request_text("POST", "/v1/completions", body)));
        std::string begun;
        char buf[4096];
        while (begun.find("data: ") == std::string::npos && readable(fd, 10000)) {  // tokens are flowing
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            begun.append(buf, std::size_t(n));
        }
        QVERIFY2(begun.find("data: ") != std::string::npos, begun.c_str());
        QElapsedTimer t;
        t.start();
        s.process.terminate();
        const std::string stream = read_all(fd);  // returns when the server closes the stream
        ::close(fd);
        QVERIFY2(s.process.waitForFinished(15000), "the server did not exit");
        const qint64 took = t.elapsed();
        s.output += s.process.readAll();
        QVERIFY2(took < 8000, qPrintable(QString("exit took %1 ms").arg(took)));
        QCOMPARE(s.process.exitCode(), 0);
        QVERIFY2(s.output.contains("unfinished request(s)"), "the drain was cut short");
        // The stream says why it ended, and ends properly.
        QVERIFY2(stream.find("shutting down") != std::string::npos,
                 stream.substr(stream.size() - std::min<std::size_t>(stream.size(), 600)).c_str());
        QVERIFY(stream.find("data: [DONE]") != std::string::npos);
    }
#endif
};

QTEST_GUILESS_MAIN(TstServeCli)
#include "tst_serve_cli.moc"
