// The views driven with QTest through the main window, against the scripted engine: adapter filtering
// and actions (pin, unload, alias, import, remove, an adapter for another base model), playground send
// and side-by-side compare, dashboard numbers, log level filter, server start/stop and snippets, and the
// adapter detail with its charts.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStyle>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

#include "fake_server_control.h"
#include "scripted_engine.h"
#include "ui/adapter_detail_page.h"
#include "ui/adapters_page.h"
#include "ui/chat_panel.h"
#include "ui/dashboard_page.h"
#include "ui/logs_page.h"
#include "ui/main_window.h"
#include "ui/models/adapter_filter_model.h"
#include "ui/models/adapter_history_model.h"
#include "ui/models/adapter_table_model.h"
#include "ui/models/chat_model.h"
#include "ui/models/engine_poller.h"
#include "ui/models/log_model.h"
#include "ui/models/stats_history_model.h"
#include "ui/playground_page.h"
#include "ui/server_page.h"
#include "ui/settings_page.h"
#include "ui/theme.h"

using namespace loradesk;
using namespace loradesk::ui;

class TestUiViews : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void cleanup();
    void adaptersFilterByTyping();
    void adaptersPinUnpinUnload();
    void adaptersAliasImportRemove();
    void adapterForAnotherBaseModelShowsWhy();
    void playgroundSendsAndStreams();
    void playgroundComparesTwoAdapters();
    void dashboardShowsSnapshot();
    void logsFilterByLevel();
    void serverStartStopAndSnippets();
    void detailShowsHistoryCharts();
    void settingsSaveTheForm();
    void appearanceAppliesAtOnce();

  private:
    bool hasCall(const std::string& call) const {
        const auto calls = m_engine->calls();
        return std::find(calls.begin(), calls.end(), call) != calls.end();
    }
    std::shared_ptr<testing::ScriptedEngine> m_engine;
    MainWindow* m_window = nullptr;
};

void TestUiViews::init() {
    m_engine = std::make_shared<testing::ScriptedEngine>(testing::desktop_fixture());
    m_window = new MainWindow;
    m_window->poller()->setInterval(50);
    m_window->setEngine(m_engine);
    m_window->show();
    QTRY_VERIFY(m_window->poller()->hasSnapshot());
    QTRY_COMPARE(m_window->adapters()->tableModel()->rowCount(), 5);
}

void TestUiViews::cleanup() {
    delete m_window;
    m_window = nullptr;
    m_engine.reset();
}

void TestUiViews::adaptersFilterByTyping() {
    AdaptersPage* page = m_window->adapters();
    m_window->showPage(MainWindow::Adapters);
    auto* name = page->findChild<QLineEdit*>("nameFilter");
    QTest::keyClicks(name, "bo");
    QCOMPARE(page->filterModel()->rowCount(), 1);
    name->clear();
    auto* pinned = page->findChild<QCheckBox*>("pinnedOnly");
    pinned->setChecked(true);
    QCOMPARE(page->filterModel()->rowCount(), 1);
    pinned->setChecked(false);
    auto* tier = page->findChild<QComboBox*>("tierFilter");
    tier->setCurrentIndex(tier->findData("gpu"));
    QCOMPARE(page->filterModel()->rowCount(), 2);
    tier->setCurrentIndex(0);
    auto* base = page->findChild<QComboBox*>("baseFilter");
    QCOMPARE(base->count(), 3);  // any + two base models
    base->setCurrentIndex(base->findData("meta-llama/Llama-3.2-1B"));
    QCOMPARE(page->filterModel()->rowCount(), 1);
}

void TestUiViews::adaptersPinUnpinUnload() {
    AdaptersPage* page = m_window->adapters();
    QVERIFY(page->selectAdapter("es"));
    auto* pin = page->findChild<QPushButton*>("pinButton");
    auto* unpin = page->findChild<QPushButton*>("unpinButton");
    auto* unload = page->findChild<QPushButton*>("unloadButton");
    QVERIFY(pin->isEnabled());
    QVERIFY(!unpin->isEnabled());
    QTest::mouseClick(pin, Qt::LeftButton);
    QTRY_VERIFY(hasCall("pin es 1"));
    QTRY_VERIFY(unpin->isEnabled());  // the refresh after the action shows it pinned
    QTest::mouseClick(unpin, Qt::LeftButton);
    QTRY_VERIFY(hasCall("pin es 0"));
    QTRY_VERIFY(!page->busy() && unload->isEnabled());
    QTest::mouseClick(unload, Qt::LeftButton);
    QTRY_VERIFY(hasCall("unload es"));
    QTRY_COMPARE(page->tableModel()->rowOf("es"), -1);  // no longer served, so no longer listed
}

void TestUiViews::adaptersAliasImportRemove() {
    AdaptersPage* page = m_window->adapters();
    QVERIFY(page->selectAdapter("it"));
    page->askAlias = [](const QString&) { return QString("italiano"); };
    QTest::mouseClick(page->findChild<QPushButton*>("aliasButton"), Qt::LeftButton);
    QTRY_VERIFY(hasCall("alias italiano it"));
    QTRY_VERIFY(!page->busy());

    QSignalSpy imported(page, &AdaptersPage::folderImported);
    QTemporaryDir adapters, empty;
    QVERIFY(QDir(adapters.path()).mkpath("fr"));
    QVERIFY(QFile(adapters.filePath("fr/adapter_config.json")).open(QIODevice::WriteOnly));
    page->pickFolder = [&] { return adapters.path(); };
    QTest::mouseClick(page->findChild<QPushButton*>("importButton"), Qt::LeftButton);
    QTRY_COMPARE(imported.count(), 1);
    QTRY_VERIFY(page->tableModel()->rowOf("fr") >= 0);

    page->pickFolder = [&] { return empty.path(); };
    QTest::mouseClick(page->findChild<QPushButton*>("importButton"), Qt::LeftButton);
    QTRY_VERIFY(page->message().contains("no adapter folders (with adapter_config.json) in '" + empty.path()));

    QVERIFY(page->selectAdapter("fr"));
    page->confirm = [](const QString&) { return false; };
    QTest::mouseClick(page->findChild<QPushButton*>("removeButton"), Qt::LeftButton);
    QVERIFY(!hasCall("remove fr"));  // declined
    QString asked;
    page->confirm = [&asked](const QString& q) {
        asked = q;
        return true;
    };
    QTest::mouseClick(page->findChild<QPushButton*>("removeButton"), Qt::LeftButton);
    QVERIFY(asked.contains("files stay on disk"));
    QTRY_VERIFY(hasCall("remove fr"));
    QTRY_COMPARE(page->tableModel()->rowOf("fr"), -1);
}

void TestUiViews::adapterForAnotherBaseModelShowsWhy() {
    AdaptersPage* page = m_window->adapters();
    QVERIFY(page->selectAdapter("llama-sql"));
    QTest::mouseClick(page->findChild<QPushButton*>("loadButton"), Qt::LeftButton);
    QTRY_VERIFY(page->message().contains("is it for another base model?"));
    QVERIFY(page->message().contains("Loading llama-sql failed"));
}

void TestUiViews::playgroundSendsAndStreams() {
    PlaygroundPage* page = m_window->playground();
    m_window->showPage(MainWindow::Playground);
    page->left()->setTarget("de");
    QCOMPARE(page->left()->target(), QString("de"));
    auto* prompt = page->findChild<QPlainTextEdit*>("promptEdit");
    QTest::keyClicks(prompt, "hallo welt");
    QTest::mouseClick(page->findChild<QPushButton*>("sendButton"), Qt::LeftButton);
    ChatModel* chat = page->left()->chat();
    QTRY_VERIFY(!page->left()->busy() && chat->rowCount() == 2);
    QCOMPARE(chat->lastAssistantText(), QString::fromStdString(testing::echo_reply("de", "hallo welt")));
    QVERIFY(page->left()->status().contains("TTFT 13 ms") || page->left()->status().contains("TTFT 12 ms"));
    QVERIFY(prompt->toPlainText().isEmpty());
    QVERIFY(hasCall("submit de"));
    QVERIFY(!page->right()->isVisible());
}

void TestUiViews::playgroundComparesTwoAdapters() {
    PlaygroundPage* page = m_window->playground();
    m_window->showPage(MainWindow::Playground);
    page->findChild<QCheckBox*>("compareCheck")->setChecked(true);
    QVERIFY(page->right()->isVisible());
    page->left()->setTarget("es");
    page->right()->setTarget("base");
    page->setPrompt("hola");
    page->send();
    QTRY_VERIFY(!page->left()->busy() && !page->right()->busy());
    QCOMPARE(page->left()->chat()->lastAssistantText(), QString("es says: hola"));
    QCOMPARE(page->right()->chat()->lastAssistantText(), QString("base says: hola"));
}

void TestUiViews::dashboardShowsSnapshot() {
    DashboardPage* page = m_window->dashboard();
    QCOMPARE(page->valueText("tokensPerSecond"), QString("42.5"));
    QCOMPARE(page->valueText("running"), QString("2"));
    QCOMPARE(page->valueText("waiting"), QString("1"));
    QCOMPARE(page->valueText("hitRate"), QString("25.0 %"));
    QCOMPARE(page->valueText("tiers"), QString("GPU 2 · CPU 1 · disk 2"));
    QCOMPARE(page->valueText("gpuSlots"), QString("2 / 4 slots"));
    QCOMPARE(page->valueText("kvUsage"), QString("400 / 1000 pages"));
    m_engine->set_tokens_per_second(99);
    QTRY_COMPARE(page->valueText("tokensPerSecond"), QString("99.0"));
    QVERIFY(page->history()->rowCount() >= 2);
}

void TestUiViews::logsFilterByLevel() {
    LogModel* model = m_window->logModel();
    model->clear();
    model->append(log::Level::debug, "scheduled 3");
    model->append(log::Level::info, "adapter de loaded");
    model->append(log::Level::error, "request failed");
    auto* level = m_window->logs()->findChild<QComboBox*>("levelCombo");
    QCOMPARE(level->currentText(), QString("info"));
    QCOMPARE(m_window->logs()->filter()->rowCount(), 2);
    level->setCurrentIndex(level->findText("error"));
    QCOMPARE(m_window->logs()->filter()->rowCount(), 1);
    level->setCurrentIndex(level->findText("trace"));
    QCOMPARE(m_window->logs()->filter()->rowCount(), 3);
    QTest::keyClicks(m_window->logs()->findChild<QLineEdit*>("logText"), "adapter");
    QCOMPARE(m_window->logs()->filter()->rowCount(), 1);
}

void TestUiViews::serverStartStopAndSnippets() {
    ServerPage* page = m_window->server();
    QVERIFY(!page->findChild<QPushButton*>("serverToggle")->isEnabled());  // no server in this build
    testing::FakeServerControl control;
    control.takenPort = 8080;
    m_window->setServerControl(&control);
    m_window->setServerConfig({"127.0.0.1", 8080, "sk-test"});
    QSignalSpy changed(m_window, &MainWindow::serverConfigChanged);
    auto* toggle = page->findChild<QPushButton*>("serverToggle");
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(!page->running());
    QVERIFY(page->statusText().contains("port 8080 is in use"));
    page->findChild<QSpinBox*>("portSpin")->setValue(9090);
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(page->running());
    QCOMPARE(changed.count(), 1);
    QCOMPARE(control.lastConfig.api_key, std::string("sk-test"));
    QVERIFY(page->statusText().contains("http://127.0.0.1:9090/v1"));
    QVERIFY(page->snippetText(0).contains("Bearer sk-test"));
    QVERIFY(page->snippetText(0).contains("\"model\": \"bofh\""));  // the first listed adapter (by name)
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(!page->running());
    QCOMPARE(page->statusText(), QString("Stopped"));
    m_window->setServerControl(nullptr);
}

void TestUiViews::detailShowsHistoryCharts() {
    AdaptersPage* page = m_window->adapters();
    QVERIFY(page->selectAdapter("de"));
    QSignalSpy loaded(m_window->detail(), &AdapterDetailPage::loaded);
    QTest::mouseClick(page->findChild<QPushButton*>("detailsButton"), Qt::LeftButton);
    QCOMPARE(m_window->currentPage(), MainWindow::Detail);
    QTRY_COMPARE(loaded.count(), 1);
    QCOMPARE(m_window->detail()->headerText(), QString("de"));
    QCOMPARE(m_window->detail()->history()->rowCount(), 30);
    auto* versions = m_window->detail()->findChild<QTableWidget*>("versionsTable");
    QCOMPARE(versions->rowCount(), 2);
    QCOMPARE(versions->item(0, 2)->text(), QString("current"));
    auto* config = m_window->detail()->findChild<QPlainTextEdit*>("configText");
    QVERIFY(config->toPlainText().contains("\"peft_type\": \"LORA\""));
}

void TestUiViews::settingsSaveTheForm() {
    SettingsPage* page = m_window->settings();
    AppSettings start;
    start.modelDir = "/models/a";
    start.port = 9000;
    page->setSettings(start);
    page->pickFolder = [] { return QString("/adapters/more"); };
    QTest::mouseClick(page->findChild<QPushButton*>("addFolder"), Qt::LeftButton);
    QTest::mouseClick(page->findChild<QPushButton*>("addFolder"), Qt::LeftButton);  // not added twice
    auto* model = page->findChild<QLineEdit*>("modelEdit");
    model->clear();
    QTest::keyClicks(model, "/models/b");
    page->findChild<QSpinBox*>("maxLoras")->setValue(12);
    page->findChild<QComboBox*>("deviceCombo")->setCurrentText("cpu");
    auto* fp8 = page->findChild<QCheckBox*>("fp8Activations");
    QVERIFY(fp8->isChecked());  // W8A8 by default
    fp8->setChecked(false);
    QSignalSpy saved(page, &SettingsPage::settingsSaved);
    QTest::mouseClick(page->findChild<QPushButton*>("saveSettings"), Qt::LeftButton);
    QCOMPARE(saved.count(), 1);
    const auto s = saved[0][0].value<AppSettings>();
    QCOMPARE(s.modelDir, QString("/models/b"));
    QCOMPARE(s.adapterFolders, QStringList{"/adapters/more"});
    QCOMPARE(s.maxLoras, 12);
    QCOMPARE(s.device, QString("cpu"));
    QVERIFY(s.fp8WeightOnly);
    QCOMPARE(s.port, 9000);  // fields the page does not show are kept
    QVERIFY(page->findChild<QLabel*>("settingsNote")->text().contains("Restart"));
}

// The appearance combo: Dark and Light switch to Fusion palettes at once, "As the system" restores the platform's.
void TestUiViews::appearanceAppliesAtOnce() {
    SettingsPage* page = m_window->settings();
    auto* combo = page->findChild<QComboBox*>("colorSchemeCombo");
    QSignalSpy changed(page, &SettingsPage::colorSchemeChanged);
    connect(page, &SettingsPage::colorSchemeChanged, this,
            [](const QString& scheme) { applyColorScheme(colorSchemeFromName(scheme)); });
    const QColor systemWindow = QApplication::palette().color(QPalette::Window);
    combo->setCurrentIndex(combo->findData("dark"));
    emit combo->activated(combo->currentIndex());
    QCOMPARE(changed.last()[0].toString(), QString("dark"));
    QVERIFY(paletteIsDark());
    QCOMPARE(QApplication::style()->name(), QString("fusion"));
    combo->setCurrentIndex(combo->findData("light"));
    emit combo->activated(combo->currentIndex());
    QVERIFY(!paletteIsDark());
    combo->setCurrentIndex(combo->findData("system"));
    emit combo->activated(combo->currentIndex());
    QCOMPARE(QApplication::palette().color(QPalette::Window), systemWindow);
    QCOMPARE(page->settings().colorScheme, QString("system"));
}

QTEST_MAIN(TestUiViews)
#include "tst_ui_views.moc"
