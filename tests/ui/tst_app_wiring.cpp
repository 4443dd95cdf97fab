// The app's wiring below the window: which model a launch serves (command line > settings > demo kit)
// and the Server view's control over engine/server — it binds, answers HTTP, refuses a taken port with
// a clear message, and restarts on another port.
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "cli.h"
#include "launch_options.h"
#include "scripted_engine.h"
#include "server_factory.h"

using namespace loradesk;

namespace {

app::LaunchOptions parse(const std::vector<std::string>& argv) {
    return app::parseLaunchOptions(cli::Args(argv, app::launchOptionSpecs()));
}

// A minimal HTTP/1.1 GET over a socket; returns the status line and body.
QByteArray httpGet(int port, const QByteArray& path) {
    QTcpSocket socket;
    socket.connectToHost(QStringLiteral("127.0.0.1"), quint16(port));
    if (!socket.waitForConnected(2000)) return {};
    socket.write("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    socket.waitForBytesWritten(2000);
    QByteArray reply;
    while (socket.waitForReadyRead(2000)) reply += socket.readAll();
    return reply;
}

}  // namespace

class TestAppWiring : public QObject {
    Q_OBJECT
  private slots:
    void modelPrecedence_data();
    void modelPrecedence();
    void explicitFlags();
    void rememberedHubIdResolvesFromTheCache();
    void firstRunAsksOnlyOnce();
    void serverControlServesAndRestarts();
};

void TestAppWiring::modelPrecedence_data() {
    QTest::addColumn<QStringList>("argv");
    QTest::addColumn<QString>("settingsModel");
    QTest::addColumn<QString>("expected");  // "demo" = the demo kit's model
    QTest::newRow("command line wins") << QStringList{"--model", "/cli/model"} << "/settings/model"
                                       << "/cli/model";
    QTest::newRow("settings next") << QStringList{} << "/settings/model"
                                   << "/settings/model";
    QTest::newRow("demo kit last") << QStringList{} << ""
                                   << "demo";
    QTest::newRow("--demo beats settings") << QStringList{"--demo"} << "/settings/model"
                                           << "demo";
}

void TestAppWiring::modelPrecedence() {
    QFETCH(QStringList, argv);
    QFETCH(QString, settingsModel);
    QFETCH(QString, expected);
    std::vector<std::string> args;
    for (const QString& a : argv) args.push_back(a.toStdString());
    app::LaunchOptions launch = parse(args);
    ui::AppSettings settings;
    settings.modelDir = settingsModel;
    settings.port = 9123;
    const std::string problem = app::resolveModel(launch, settings);
    QVERIFY2(problem.empty(), problem.c_str());
    if (expected == "demo") {
        QVERIFY(launch.serve.demo);
        QVERIFY(QString::fromStdString(launch.serve.engine.model_dir).contains("/demo/"));
        QCOMPARE(launch.serve.engine.named_adapters.size(), size_t(4));
        QCOMPARE(launch.serve.extra_adapter_roots.size(), size_t(1));
    } else {
        QCOMPARE(QString::fromStdString(launch.serve.engine.model_dir), expected);
        QVERIFY(launch.serve.engine.named_adapters.empty());
    }
    QCOMPARE(launch.serve.port, 9123);  // no --port: the remembered one
}

void TestAppWiring::explicitFlags() {
    app::LaunchOptions launch = parse({"--port", "7000", "--max-loras", "2", "--headless"});
    QVERIFY(launch.headless);
    QVERIFY(launch.explicitServer);
    QVERIFY(launch.explicitLimits);
    QVERIFY(!launch.explicitModel);
    ui::AppSettings settings;
    settings.port = 9123;
    settings.maxLoras = 16;
    QVERIFY(app::resolveModel(launch, settings).empty());
    QCOMPARE(launch.serve.port, 7000);
    QCOMPARE(launch.serve.engine.max_loras, 2);
    QVERIFY_THROWS_EXCEPTION(Error, parse({"--port", "99999"}));
    // --fp8-weight-only is a limit too: given, it wins over the settings and is what they remember.
    launch = parse({"--fp8-weight-only"});
    QVERIFY(launch.explicitLimits);
    settings.fp8WeightOnly = false;
    QVERIFY(app::resolveModel(launch, settings).empty());
    QVERIFY(launch.serve.engine.fp8_weight_only);
    launch = parse({});
    settings.fp8WeightOnly = true;
    QVERIFY(app::resolveModel(launch, settings).empty());
    QVERIFY(launch.serve.engine.fp8_weight_only);  // no flag: the remembered route
}

// Settings remember --model as typed; a Hub id is resolved from the Hugging Face cache at the next launch.
void TestAppWiring::rememberedHubIdResolvesFromTheCache() {
    QTemporaryDir cache;
    const QString commit(40, QChar('a'));
    const QString repo = cache.filePath("models--acme--fortune");
    QVERIFY(QDir().mkpath(repo + "/refs") && QDir().mkpath(repo + "/snapshots/" + commit));
    QFile ref(repo + "/refs/main");
    QVERIFY(ref.open(QIODevice::WriteOnly) && ref.write(commit.toUtf8()) == 40);
    ref.close();
    QFile config(repo + "/snapshots/" + commit + "/config.json");
    QVERIFY(config.open(QIODevice::WriteOnly) && config.write("{}") == 2);
    config.close();
    qputenv("HF_HUB_CACHE", cache.path().toUtf8());

    app::LaunchOptions launch = parse({"--model", "acme/fortune"});
    QCOMPARE(launch.modelReference, std::string("acme/fortune"));  // what the settings keep
    ui::AppSettings settings;
    settings.modelDir = "acme/fortune";
    launch = parse({});
    QVERIFY(app::resolveModel(launch, settings).empty());
    QCOMPARE(QString::fromStdString(launch.serve.engine.model_dir), repo + "/snapshots/" + commit);
    QCOMPARE(launch.serve.engine.served_model_id, std::string("acme/fortune"));

    settings.modelDir = "acme/missing";
    launch = parse({});
    const std::string problem = app::resolveModel(launch, settings);
    QVERIFY2(problem.find("loradeskd pull acme/missing") != std::string::npos, problem.c_str());
    qunsetenv("HF_HUB_CACHE");
}

// The first-start question comes only without --model/--demo, with a window, and while the settings were never
// written (a start that loaded a model writes them); LORADESK_NO_FIRST_RUN=1 skips it for scripted starts.
void TestAppWiring::firstRunAsksOnlyOnce() {
    QTemporaryDir dir;
    QSettings store(dir.filePath("s.ini"), QSettings::IniFormat);
    QVERIFY(app::needsFirstRunChoice(parse({}), store));
    QVERIFY(!app::needsFirstRunChoice(parse({"--demo"}), store));
    QVERIFY(!app::needsFirstRunChoice(parse({"--model", "/cli/model"}), store));
    QVERIFY(!app::needsFirstRunChoice(parse({"--headless"}), store));
    qputenv("LORADESK_NO_FIRST_RUN", "1");
    QVERIFY(!app::needsFirstRunChoice(parse({}), store));
    qunsetenv("LORADESK_NO_FIRST_RUN");
    ui::AppSettings settings;  // the demo kit chosen: an empty model, remembered
    settings.save(store);
    QVERIFY(!app::needsFirstRunChoice(parse({}), store));
}

void TestAppWiring::serverControlServesAndRestarts() {
    auto engine = std::make_shared<testing::ScriptedEngine>(testing::desktop_fixture());
    auto control = app::makeServerControl(engine, {});
    QVERIFY(control);
    QVERIFY(!control->running());
    QVERIFY(control->start({"127.0.0.1", 0, ""}).ok());
    QVERIFY(control->running());
    const int port = control->port();
    QVERIFY(port > 0);
    const QByteArray health = httpGet(port, "/health");
    QVERIFY2(health.startsWith("HTTP/1.1 200"), health.constData());

    auto other = app::makeServerControl(engine, {});
    const Status taken = other->start({"127.0.0.1", port, ""});
    QVERIFY(!taken.ok());
    QCOMPARE(taken.code, ErrorCode::conflict);
    QVERIFY(!other->running());

    control->stop();
    QVERIFY(!control->running());
    QVERIFY(httpGet(port, "/health").isEmpty());
    QVERIFY(other->start({"127.0.0.1", port, "sk-x"}).ok());  // the port is free again
    QVERIFY2(httpGet(port, "/v1/models").startsWith("HTTP/1.1 401"), "an API key is now required");
    other->stop();
}

QTEST_GUILESS_MAIN(TestAppWiring)
#include "tst_app_wiring.moc"
