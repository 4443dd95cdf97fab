// The desktop views over the real engine on the CPU runner with the demo kit (a small trained Qwen3 and
// its de/es/it/bofh adapters): the engine starts through EngineHost off the GUI thread, the Adapters
// view lists the kit, pinning from the view reaches the engine, the Playground streams a greedy reply
// from an adapter, and the Adapter detail view loads the engine's details.
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "demo_kit.h"
#include "ui/adapter_detail_page.h"
#include "ui/adapters_page.h"
#include "ui/chat_panel.h"
#include "ui/engine_host.h"
#include "ui/main_window.h"
#include "ui/models/adapter_table_model.h"
#include "ui/models/chat_model.h"
#include "ui/models/engine_poller.h"
#include "ui/playground_page.h"

using namespace loradesk;
using namespace loradesk::ui;

class TestUiRealEngine : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase();
    void cleanupTestCase();
    void adaptersListTheDemoKit();
    void pinFromTheViewReachesTheEngine();
    void playgroundStreamsFromAnAdapter();
    void detailLoadsFromTheEngine();

  private:
    QTemporaryDir m_data;
    EngineHost* m_host = nullptr;
    MainWindow* m_window = nullptr;
};

void TestUiRealEngine::initTestCase() {
    const auto kit = cli::find_demo_kit();
    if (!kit) QSKIP("the demo kit (resources/demo) is not available");
    api::EngineOptions o;
    o.model_dir = kit->model_dir;
    o.named_adapters = kit->adapters;
    o.device = "cpu";
    o.data_dir = m_data.path().toStdString();
    o.cpu_threads = 2;
    o.kv_memory_gb = 0.05;
    m_host = new EngineHost(api::create_engine);
    m_window = new MainWindow;
    m_window->poller()->setInterval(100);
    QSignalSpy ready(m_host, &EngineHost::ready);
    QSignalSpy failed(m_host, &EngineHost::failed);
    m_host->start(o);
    QVERIFY(m_host->starting());
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() + failed.count() == 1, 60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    m_window->setEngine(m_host->engine());
    m_window->show();
    QTRY_VERIFY(m_window->poller()->hasSnapshot());
}

void TestUiRealEngine::cleanupTestCase() {
    delete m_window;
    delete m_host;  // shuts the engine down
}

void TestUiRealEngine::adaptersListTheDemoKit() {
    AdapterTableModel* model = m_window->adapters()->tableModel();
    QTRY_VERIFY(model->rowCount() >= 4);
    for (const char* name : {"de", "es", "it", "bofh"}) {
        QVERIFY2(model->rowOf(name) >= 0, name);
        QVERIFY(model->adapterAt(model->rowOf(name))->compatible);
        // Folders found at start-up are served by name at once and read in the background: the rank shows
        // once the folder has been read (the view refreshes from the engine).
        QTRY_VERIFY(model->adapterAt(model->rowOf(name))->rank > 0);
    }
}

void TestUiRealEngine::pinFromTheViewReachesTheEngine() {
    AdaptersPage* page = m_window->adapters();
    QTRY_VERIFY(page->selectAdapter("es"));
    auto* pin = page->findChild<QPushButton*>("pinButton");
    QTRY_VERIFY(pin->isEnabled());
    QTest::mouseClick(pin, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!page->busy(), 30000);
    QVERIFY2(!page->message().contains("failed"), qPrintable(page->message()));
    auto info = m_host->engine()->adapter("es");
    QVERIFY(info.ok());
    QVERIFY(info->pinned);
    const AdapterTableModel* model = page->tableModel();
    QTRY_VERIFY(model->adapterAt(model->rowOf("es"))->pinned);
}

void TestUiRealEngine::playgroundStreamsFromAnAdapter() {
    PlaygroundPage* page = m_window->playground();
    QTRY_VERIFY(page->left()->chat() != nullptr);
    page->left()->setTarget("de");
    QCOMPARE(page->left()->target(), QString("de"));
    page->findChild<QDoubleSpinBox*>("temperature")->setValue(0);
    page->findChild<QSpinBox*>("maxTokens")->setValue(8);
    page->setPrompt("Hello, how are you?");
    page->send();
    QVERIFY(page->left()->busy());
    QTRY_VERIFY_WITH_TIMEOUT(!page->left()->busy(), 60000);
    ChatModel* chat = page->left()->chat();
    QCOMPARE(chat->rowCount(), 2);
    const QModelIndex reply = chat->index(1);
    QVERIFY2(!reply.data(ChatModel::FailedRole).toBool(), qPrintable(reply.data(ChatModel::SummaryRole).toString()));
    QVERIFY(!chat->lastAssistantText().isEmpty());
    QVERIFY(reply.data(ChatModel::SummaryRole).toString().contains("tokens"));
}

void TestUiRealEngine::detailLoadsFromTheEngine() {
    QSignalSpy loaded(m_window->detail(), &AdapterDetailPage::loaded);
    m_window->detail()->showAdapter("bofh");
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() == 1, 30000);
    QCOMPARE(m_window->detail()->headerText(), QString("bofh"));
    auto* facts = m_window->detail()->findChild<QLabel*>("detailFacts");
    QVERIFY2(facts->text().contains("rank"), qPrintable(facts->text()));
}

QTEST_MAIN(TestUiRealEngine)
#include "tst_ui_real_engine.moc"
