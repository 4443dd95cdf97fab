// The other item models and helpers of ui/models: log list + sink + level filter, chat transcript and
// its streaming, per-minute and live history, engine poller, client snippets and persisted settings.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <thread>

#include "scripted_engine.h"
#include "ui/models/adapter_history_model.h"
#include "ui/models/app_settings.h"
#include "ui/models/chat_model.h"
#include "ui/models/chat_stream.h"
#include "ui/models/engine_poller.h"
#include "ui/models/log_model.h"
#include "ui/models/snippets.h"
#include "ui/models/stats_history_model.h"

using namespace loradesk;
using namespace loradesk::ui;

class TestUiModels : public QObject {
    Q_OBJECT
  private slots:
    void logModelDropsOldestLines();
    void logFilter_data();
    void logFilter();
    void logSinkCrossesThreads();
    void chatModelBuildsMessages();
    void chatStreamStreamsReply();
    void chatStreamReportsUnknownAdapter();
    void adapterHistorySortsAndConverts();
    void statsHistoryIsBounded();
    void pollerDeliversSnapshots();
    void snippets_data();
    void snippets();
    void settingsRoundTrip();
    void settingsRejectOutOfRange();
};

void TestUiModels::logModelDropsOldestLines() {
    LogModel model(3);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (int i = 0; i < 5; ++i) model.append(log::Level::info, QString("line %1").arg(i));
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.index(0).data(LogModel::MessageRole).toString(), QString("line 2"));
    QCOMPARE(model.index(2).data(LogModel::MessageRole).toString(), QString("line 4"));
    QVERIFY(model.index(2).data().toString().contains("[info] line 4"));
    QCOMPARE(model.plainText().count('\n'), 2);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
}

void TestUiModels::logFilter_data() {
    QTest::addColumn<int>("minimum");
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("rows");
    QTest::newRow("trace shows all") << int(log::Level::trace) << "" << 5;
    QTest::newRow("info") << int(log::Level::info) << "" << 3;
    QTest::newRow("warn") << int(log::Level::warn) << "" << 2;
    QTest::newRow("error") << int(log::Level::error) << "" << 1;
    QTest::newRow("info + text") << int(log::Level::info) << "ADAPTER" << 2;
}

void TestUiModels::logFilter() {
    QFETCH(int, minimum);
    QFETCH(QString, text);
    QFETCH(int, rows);
    LogModel model;
    LogFilterModel filter;
    filter.setSourceModel(&model);
    QAbstractItemModelTester tester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.append(log::Level::trace, "step 1");
    model.append(log::Level::debug, "batch of 4");
    model.append(log::Level::info, "loaded adapter de");
    model.append(log::Level::warn, "adapter es evicted");
    model.append(log::Level::error, "request failed");
    filter.setMinimumLevel(log::Level(minimum));
    filter.setText(text);
    QCOMPARE(filter.rowCount(), rows);
}

void TestUiModels::logSinkCrossesThreads() {
    LogModel model;
    auto* sink = new LogSink(&model);
    const log::Level before = log::level();
    log::set_level(log::Level::info);
    std::thread worker([] { log::warn("from the engine thread {}", 7); });
    worker.join();
    QTRY_COMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0).data(LogModel::MessageRole).toString(), QString("from the engine thread 7"));
    QCOMPARE(model.index(0).data(LogModel::LevelRole).toInt(), int(log::Level::warn));
    delete sink;  // after this no more lines arrive
    log::info("after the sink is gone");
    QTest::qWait(20);
    QCOMPARE(model.rowCount(), 1);
    log::set_level(before);
}

void TestUiModels::chatModelBuildsMessages() {
    ChatModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSystemPrompt("be brief");
    model.addUser("hi");
    model.beginAssistant();
    QVERIFY(model.streaming());
    model.appendAssistant("hel");
    model.appendAssistant("lo");
    QCOMPARE(model.messagesJson().size(), size_t(2));  // the streaming turn is not sent back
    model.finishAssistant("5 tokens");
    model.addUser("again");
    model.beginAssistant();
    model.failAssistant("adapter 'x' is not registered");
    model.addUser("third");
    const nlohmann::ordered_json m = model.messagesJson();
    QCOMPARE(m.size(), size_t(4));
    QCOMPARE(QString::fromStdString(m[0]["role"]), QString("system"));
    QCOMPARE(QString::fromStdString(m[2]["content"]), QString("hello"));
    QCOMPARE(QString::fromStdString(m[3]["content"]), QString("third"));  // "again" dropped with its failure
    QCOMPARE(model.lastAssistantText(), QString());
    QVERIFY(model.index(3).data(ChatModel::FailedRole).toBool());
    QVERIFY(model.index(3).data(ChatModel::SummaryRole).toString().contains("not registered"));
}

void TestUiModels::chatStreamStreamsReply() {
    auto engine = std::make_shared<testing::ScriptedEngine>(testing::desktop_fixture());
    ChatStream stream;
    QSignalSpy submitted(&stream, &ChatStream::submitted);
    QSignalSpy text(&stream, &ChatStream::text);
    QSignalSpy finished(&stream, &ChatStream::finished);
    api::GenerateRequest r;
    r.model = "german";
    r.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "guten tag"}}});
    QVERIFY(stream.start(engine, r));
    QVERIFY(!stream.start(engine, r));  // busy
    QTRY_COMPARE(finished.count(), 1);
    QCOMPARE(submitted.count(), 1);
    QCOMPARE(submitted[0][0].toString(), QString("de"));
    QCOMPARE(submitted[0][1].toString(), QString("gpu"));
    QString all;
    for (const auto& args : text) all += args[0].toString();
    QCOMPARE(all, QString::fromStdString(testing::echo_reply("de", "guten tag")));
    const auto result = finished[0][0].value<ChatResult>();
    QCOMPARE(result.finishReason, QString("stop"));
    QCOMPARE(result.completionTokens, 4);
    QVERIFY(!stream.busy());
}

void TestUiModels::chatStreamReportsUnknownAdapter() {
    auto engine = std::make_shared<testing::ScriptedEngine>(testing::desktop_fixture());
    ChatStream stream;
    QSignalSpy failed(&stream, &ChatStream::failed);
    api::GenerateRequest r;
    r.model = "nope";
    r.prompt = "x";
    QVERIFY(stream.start(engine, r));
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(failed[0][0].toString().contains("`nope` does not exist"));
    QVERIFY(!stream.busy());
}

void TestUiModels::adapterHistorySortsAndConverts() {
    AdapterHistoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    testing::ScriptedEngine engine(testing::desktop_fixture());
    auto history = engine.adapter_history("de", 5);
    QVERIFY(history.ok());
    model.setPoints(history.value());
    QCOMPARE(model.rowCount(), 5);
    QVERIFY(model.value(0, AdapterHistoryModel::Minute) < model.value(4, AdapterHistoryModel::Minute));
    const double requests = model.value(4, AdapterHistoryModel::Requests);
    QCOMPARE(model.value(4, AdapterHistoryModel::TokensPerSecond), requests * 60 / 60.0);
    QCOMPARE(model.index(0, AdapterHistoryModel::TtftP95).data().toString(), QString("53.0"));
}

void TestUiModels::statsHistoryIsBounded() {
    StatsHistoryModel model(3);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    EngineSnapshot s;
    s.stats.kv_pages_total = 100;
    s.stats.kv_pages_free = 25;
    s.stats.prompt_tokens_total = 200;
    s.stats.cached_tokens_total = 50;
    for (int i = 0; i < 5; ++i) {
        s.secondsSinceStart = i;
        s.stats.tokens_per_second = 10.0 * i;
        model.append(s);
    }
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.value(0, StatsHistoryModel::Seconds), 2.0);
    QCOMPARE(model.value(2, StatsHistoryModel::TokensPerSecond), 40.0);
    QCOMPARE(model.value(2, StatsHistoryModel::KvUsedPercent), 75.0);
    QCOMPARE(model.value(2, StatsHistoryModel::PrefixHitPercent), 25.0);
}

void TestUiModels::pollerDeliversSnapshots() {
    auto engine = std::make_shared<testing::ScriptedEngine>(testing::desktop_fixture());
    EnginePoller poller;
    QSignalSpy updated(&poller, &EnginePoller::updated);
    poller.setInterval(20);
    poller.setEngine(engine);
    QTRY_VERIFY(updated.count() >= 2);
    QCOMPARE(poller.last().adapters.size(), size_t(5));
    QCOMPARE(poller.last().stats.tokens_per_second, 42.5);
    engine->set_tokens_per_second(7);
    QTRY_COMPARE(poller.last().stats.tokens_per_second, 7.0);
    poller.setEngine(nullptr);
}

void TestUiModels::snippets_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QStringList>("mustContain");
    QTest::newRow("curl with key") << int(SnippetKind::Curl) << "sk-1"
                                   << QStringList{"curl http://127.0.0.1:9000/v1/chat/completions", "Bearer sk-1",
                                                  "\"model\": \"de\""};
    QTest::newRow("curl without key") << int(SnippetKind::Curl) << "" << QStringList{"\"stream\": true"};
    QTest::newRow("python") << int(SnippetKind::Python) << ""
                            << QStringList{"OpenAI(base_url=\"http://127.0.0.1:9000/v1\", api_key=\"not-needed\")",
                                           "model=\"de\""};
    QTest::newRow("javascript") << int(SnippetKind::JavaScript) << "k"
                                << QStringList{"baseURL: \"http://127.0.0.1:9000/v1\"", "apiKey: \"k\"", "for await"};
    QTest::newRow("continue") << int(SnippetKind::Continue) << "k"
                              << QStringList{"provider: openai", "apiBase: http://127.0.0.1:9000/v1", "model: de"};
    QTest::newRow("cline") << int(SnippetKind::Cline) << "" << QStringList{"OpenAI Compatible", "Model ID:  de"};
}

void TestUiModels::snippets() {
    QFETCH(int, kind);
    QFETCH(QString, key);
    QFETCH(QStringList, mustContain);
    const SnippetTarget target{baseUrlFor("0.0.0.0", 9000), key, "de"};
    const QString text = snippet(SnippetKind(kind), target);
    for (const QString& s : mustContain) QVERIFY2(text.contains(s), qPrintable(s + " not in:\n" + text));
    if (key.isEmpty()) QVERIFY(!text.contains("Bearer"));
    QCOMPARE(baseUrlFor("::1", 80), QString("http://[::1]:80/v1"));
}

void TestUiModels::settingsRoundTrip() {
    QTemporaryDir dir;
    QSettings file(dir.filePath("s.ini"), QSettings::IniFormat);
    AppSettings a;
    a.modelDir = "/models/qwen";
    a.addAdapterFolder("/adapters/one/");
    a.addAdapterFolder("/adapters/one");
    a.maxLoras = 8;
    a.kvMemoryGb = 2.5;
    a.fp8WeightOnly = true;
    a.port = 9100;
    a.apiKey = "secret";
    a.colorScheme = "dark";
    a.save(file);
    const AppSettings b = AppSettings::load(file);
    QCOMPARE(b.modelDir, a.modelDir);
    QCOMPARE(b.adapterFolders, QStringList{"/adapters/one"});
    QCOMPARE(b.maxLoras, 8);
    QCOMPARE(b.kvMemoryGb, 2.5);
    QVERIFY(b.fp8WeightOnly);
    QCOMPARE(b.port, 9100);
    QCOMPARE(b.apiKey, QString("secret"));
    QCOMPARE(b.colorScheme, QString("dark"));
    api::EngineOptions o;
    o.model_dir = "/from/cli";
    b.applyTo(o, true, false);
    QCOMPARE(QString::fromStdString(o.model_dir), QString("/from/cli"));  // the command line wins
    QCOMPARE(o.max_loras, 8);
    QVERIFY(o.fp8_weight_only);  // remembered like the other limits
    QCOMPARE(o.adapter_dirs.size(), size_t(1));
    o.fp8_weight_only = false;
    b.applyTo(o, false, true);
    QVERIFY(!o.fp8_weight_only);  // --fp8-weight-only absent from a command line that set limits: W8A8 stays
    QCOMPARE(QString::fromStdString(o.model_dir), QString("/models/qwen"));
    QCOMPARE(o.adapter_dirs.size(), size_t(1));  // not added twice
}

void TestUiModels::settingsRejectOutOfRange() {
    QTemporaryDir dir;
    QSettings file(dir.filePath("s.ini"), QSettings::IniFormat);
    file.setValue("engine/maxLoras", -3);
    file.setValue("engine/device", "tpu");
    file.setValue("server/port", 70000);
    file.setValue("engine/kvMemoryGb", "lots");
    file.setValue("ui/colorScheme", "purple");
    const AppSettings s = AppSettings::load(file);
    QCOMPARE(s.maxLoras, 4);
    QCOMPARE(s.device, QString("auto"));
    QCOMPARE(s.port, 8080);
    QCOMPARE(s.kvMemoryGb, 0.5);
    QCOMPARE(s.colorScheme, QString("system"));
}

QTEST_GUILESS_MAIN(TestUiModels)
#include "tst_ui_models.moc"
