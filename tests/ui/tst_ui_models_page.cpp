// The Models page driven with QTest through the main window, against tests/hub/fake_hub.py on 127.0.0.1 (the
// Hub's endpoints and answers) and the real hub::pull() writing a temporary Hugging Face cache: a free-text
// search, an unknown id and the Hub's adapters of the served model, a download whose progress reaches 100 %
// and leaves the cache layout, a cancel in the middle of a throttled download (nothing looks complete), the
// messages for a gated repository, HF_HUB_OFFLINE and an unreachable Hub, the cached list refreshed after a download,
// "Serve it" loading the adapter into the engine double, "use as base model", and the first-start dialog listing the
// cached model.
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

#include "hf_cache_writer.h"
#include "hub/fake_hub_process.h"
#include "scripted_engine.h"
#include "ui/adapters_page.h"
#include "ui/discover_panel.h"
#include "ui/first_run_dialog.h"
#include "ui/local_models_panel.h"
#include "ui/main_window.h"
#include "ui/models/adapter_table_model.h"
#include "ui/models/engine_poller.h"
#include "ui/models/hub_cache_model.h"
#include "ui/models/hub_search_model.h"
#include "ui/models_page.h"

using namespace loradesk;
using namespace loradesk::ui;
namespace fs = std::filesystem;

namespace {

const QString kModelDir = LORADESK_SOURCE_DIR "/resources/demo/fortune-6m";
const QString kAdapterDir = LORADESK_SOURCE_DIR "/resources/demo/adapters/bofh";  // base_model: kit/model

}  // namespace

class TestUiModelsPage : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase();
    void init();
    void cleanup();
    void navigationHasModelsWithIcons();
    void searchListsReposWithSizes();
    void unknownIdSaysWhatToDo();
    void adaptersOfTheServedModel();
    void downloadReachesTheCacheAndTheList();
    void cancelLeavesNothingComplete();
    void gatedRepositoryExplains();
    void offlineAndUnreachableExplain();
    void serveItLoadsTheAdapter();
    void useAsBaseModel();
    void firstRunListsCachedModels();

  private:
    DiscoverPanel* discover() const { return m_window->models()->discover(); }
    LocalModelsPanel* local() const { return m_window->models()->local(); }
    QString repoDir(const QString& id) const { return m_cache + "/models--" + QString(id).replace('/', "--"); }
    void useHub(const testing::FakeHub& hub) { qputenv("HF_ENDPOINT", hub.endpoint().toUtf8()); }
    void searchFor(const QString& text);
    bool download(const QString& id);  // selects `id` in the results and clicks Download

    QTemporaryDir m_dir;
    QString m_cache;
    int m_n = 0;
    // acme/fortune (model; main and v2), acme/bofh-lora (adapter of kit/model), acme/secret (gated)
    testing::FakeHub m_hub;
    std::shared_ptr<testing::ScriptedEngine> m_engine;
    MainWindow* m_window = nullptr;
};

void TestUiModelsPage::initTestCase() {
    for (const char* k : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_TOKEN_PATH", "http_proxy",
                          "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
        qunsetenv(k);
    qputenv("HF_HOME", (m_dir.path() + "/hf-home").toUtf8());  // no token file of the user's
    QVERIFY(m_hub.start({"--repo", "acme/fortune=" + kModelDir, "--repo", "acme/fortune@v2=" + kModelDir, "--repo",
                         "acme/bofh-lora=" + kAdapterDir, "--repo", "acme/secret=" + kAdapterDir, "--gated",
                         "acme/secret", "--token", "hf_right"}));
}

void TestUiModelsPage::init() {
    m_cache = m_dir.path() + QString("/cache-%1").arg(++m_n);
    qputenv("HF_HUB_CACHE", m_cache.toUtf8());
    useHub(m_hub);
    testing::ScriptedFixture fixture = testing::desktop_fixture();
    fixture.model.id = "kit/model";  // served as a Hub id, as `--model kit/model` would be
    m_engine = std::make_shared<testing::ScriptedEngine>(fixture);
    m_window = new MainWindow;
    m_window->poller()->setInterval(50);
    m_window->setEngine(m_engine);
    m_window->show();
    QTRY_VERIFY(m_window->poller()->hasSnapshot());
    m_window->showPage(MainWindow::Models);
}

void TestUiModelsPage::cleanup() {
    delete m_window;
    m_window = nullptr;
}

void TestUiModelsPage::searchFor(const QString& text) {
    QSignalSpy done(discover(), &DiscoverPanel::searchDone);
    discover()->findChild<QLineEdit*>("hubSearchEdit")->setText(text);
    QTest::mouseClick(discover()->findChild<QPushButton*>("hubSearchButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
}

bool TestUiModelsPage::download(const QString& id) {
    if (!discover()->selectListing(id)) return false;
    auto* button = discover()->findChild<QPushButton*>("downloadButton");
    if (!button->isEnabled()) return false;
    QTest::mouseClick(button, Qt::LeftButton);
    return discover()->downloader()->running();
}

void TestUiModelsPage::navigationHasModelsWithIcons() {
    QCOMPARE(MainWindow::pageTitle(MainWindow::Models), QString("Models"));
    QCOMPARE(m_window->currentPage(), MainWindow::Models);
    for (int p = 0; p < MainWindow::PageCount; ++p) QVERIFY(!MainWindow::pageIconName(MainWindow::Page(p)).isEmpty());
    auto* tabs = m_window->models()->findChild<QTabWidget*>("modelsTabs");
    QCOMPARE(tabs->count(), 2);
}

void TestUiModelsPage::searchListsReposWithSizes() {
    m_window->models()->showTab(ModelsPage::Discover);
    searchFor("FORTUNE");  // the Hub's search ignores case
    HubSearchModel* results = discover()->results();
    QCOMPARE(results->ids(), QStringList{"acme/fortune"});
    QCOMPARE(results->index(0, HubSearchModel::Kind).data().toString(), QString("Model"));
    // The listing has no sizes; each repository's file list fills them in afterwards.
    QTRY_VERIFY_WITH_TIMEOUT(
        results->index(0, HubSearchModel::Size).data(HubSearchModel::SortRole).toLongLong() > 12000000, 20000);
    QVERIFY2(discover()->message().startsWith("1 repository for 'FORTUNE'"), qPrintable(discover()->message()));
    searchFor("bofh");
    QCOMPARE(results->ids(), QStringList{"acme/bofh-lora"});
    QCOMPARE(results->index(0, 0).data(HubSearchModel::AdapterRole).toBool(), true);
    // An id with a revision is asked for directly and keeps its revision, so Download fetches that one.
    searchFor("acme/fortune@v2");
    QCOMPARE(results->ids(), QStringList{"acme/fortune@v2"});
    QVERIFY(results->listingAt(0)->bytes > 12000000);
}

void TestUiModelsPage::unknownIdSaysWhatToDo() {
    searchFor("acme/missing");
    QCOMPARE(discover()->results()->rowCount(), 0);
    QVERIFY2(discover()->message().contains("acme/missing was not found on the Hub") &&
                 discover()->message().contains("check the id"),
             qPrintable(discover()->message()));
}

void TestUiModelsPage::adaptersOfTheServedModel() {
    auto* button = discover()->findChild<QPushButton*>("baseAdaptersButton");
    QTRY_COMPARE(button->text(), QString("Adapters for kit/model"));  // from the poller's snapshot
    QVERIFY(button->isEnabled());
    QSignalSpy done(discover(), &DiscoverPanel::searchDone);
    QTest::mouseClick(button, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    // Both adapters name kit/model as their base; the model is not listed.
    QStringList ids = discover()->results()->ids();
    ids.sort();
    QCOMPARE(ids, (QStringList{"acme/bofh-lora", "acme/secret"}));
    QCOMPARE(discover()->results()->index(0, 0).data(HubSearchModel::AdapterRole).toBool(), true);
}

void TestUiModelsPage::downloadReachesTheCacheAndTheList() {
    QSignalSpy scanned(local(), &LocalModelsPanel::scanned);
    local()->refresh();
    QTRY_COMPARE(scanned.count(), 1);
    QCOMPARE(local()->cacheModel()->rowCount(), 0);
    QCOMPARE(local()->cacheDir(), m_cache);

    searchFor("acme/fortune");
    QSignalSpy progress(discover()->downloader(), &HubDownload::progress);
    QSignalSpy finished(discover()->downloader(), &HubDownload::finished);
    QVERIFY(download("acme/fortune"));
    QVERIFY(!discover()->findChild<QPushButton*>("downloadButton")->isEnabled());
    QVERIFY(discover()->findChild<QPushButton*>("cancelDownloadButton")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY(progress.count() >= 1);
    const auto last = progress.last()[0].value<DownloadProgress>();
    QCOMPARE(last.bytesDone, last.bytesTotal);
    QCOMPARE(last.filesDone, last.filesTotal);
    QCOMPARE(discover()->progressPercent(), 100);
    QVERIFY2(discover()->progressText().contains("files downloaded"), qPrintable(discover()->progressText()));

    // huggingface_hub's layout: refs/main -> commit, snapshot entries linking into blobs/.
    const auto result = finished[0][0].value<DownloadResult>();
    QVERIFY(!result.adapter);
    QFile ref(repoDir("acme/fortune") + "/refs/main");
    QVERIFY(ref.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromLatin1(ref.readAll()), result.commit);
    QCOMPARE(result.snapshot, repoDir("acme/fortune") + "/snapshots/" + result.commit);
    for (const QString& name : QDir(kModelDir).entryList(QDir::Files)) {
        const fs::path link = (result.snapshot + "/" + name).toStdString();
        QVERIFY2(fs::is_symlink(link), qPrintable(name));
        QCOMPARE(QFileInfo(result.snapshot + "/" + name).size(), QFileInfo(kModelDir + "/" + name).size());
    }
    QVERIFY(discover()->message().contains(result.snapshot));

    // The list on this machine follows.
    QTRY_VERIFY_WITH_TIMEOUT(scanned.count() == 2, 10000);
    const int row = local()->cacheModel()->rowOf("acme/fortune");
    QVERIFY(row >= 0);
    const CachedRepo* repo = local()->cacheModel()->repoAt(row);
    QCOMPARE(repo->kind, CachedRepo::Kind::model);
    QCOMPARE(repo->commit, result.commit);
    QVERIFY(repo->bytes >= 12598424);
}

void TestUiModelsPage::cancelLeavesNothingComplete() {
    testing::FakeHub slow;  // the file host sends 1 MB/s: the 12.6 MB weights take 12 s
    QVERIFY(slow.start({"--repo", "acme/fortune=" + kModelDir, "--throttle", "1000000"}));
    useHub(slow);
    searchFor("acme/fortune");
    QSignalSpy progress(discover()->downloader(), &HubDownload::progress);
    QSignalSpy failed(discover()->downloader(), &HubDownload::failed);
    QVERIFY(download("acme/fortune"));
    QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.last()[0].value<DownloadProgress>().bytesDone > 100000,
                             20000);
    QVERIFY(discover()->progressText().contains("/s"));
    QTest::mouseClick(discover()->findChild<QPushButton*>("cancelDownloadButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000);
    QCOMPARE(failed[0][2].toBool(), true);
    QCOMPARE(discover()->progressText(), QString("cancelled"));
    QVERIFY2(discover()->message().contains("cancelled"), qPrintable(discover()->message()));
    QVERIFY(discover()->findChild<QPushButton*>("downloadButton")->isEnabled());

    // Only .incomplete files hold the weights' bytes; no ref, no snapshot entry for them.
    const QString repo = repoDir("acme/fortune");
    QVERIFY(!QFile::exists(repo + "/refs/main"));
    for (const QString& blob : QDir(repo + "/blobs").entryList(QDir::Files))
        QVERIFY2(blob.endsWith(".incomplete") || QFileInfo(repo + "/blobs/" + blob).size() < 12598424,
                 qPrintable(blob));
    QVERIFY(QDir(repo + "/blobs").entryList({"*.incomplete"}, QDir::Files).size() >= 1);
    for (const QString& snap : QDir(repo + "/snapshots").entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        QVERIFY(!QFile::exists(repo + "/snapshots/" + snap + "/model.safetensors"));
}

void TestUiModelsPage::gatedRepositoryExplains() {
    searchFor("acme/secret");
    QSignalSpy failed(discover()->downloader(), &HubDownload::failed);
    QVERIFY(download("acme/secret"));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    QCOMPARE(failed[0][2].toBool(), false);
    const QString message = discover()->message();
    QVERIFY2(message.contains("acme/secret is a gated repository") && message.contains("HF_TOKEN") &&
                 message.contains("accept its licence"),
             qPrintable(message));
    QCOMPARE(discover()->progressText(), QString("failed"));
    QVERIFY(!QFile::exists(repoDir("acme/secret") + "/refs/main"));
}

// HF_HUB_OFFLINE and a Hub that cannot be reached: the search and the download say so, and what to do.
void TestUiModelsPage::offlineAndUnreachableExplain() {
    searchFor("acme/fortune");
    QSignalSpy failed(discover()->downloader(), &HubDownload::failed);
    qputenv("HF_HUB_OFFLINE", "1");
    QVERIFY(download("acme/fortune"));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000);
    QVERIFY2(discover()->message().contains("unset HF_HUB_OFFLINE to download it"), qPrintable(discover()->message()));
    searchFor("fortune");
    QVERIFY2(discover()->message().contains("HF_HUB_OFFLINE is set") && discover()->message().contains("unset it"),
             qPrintable(discover()->message()));
    qunsetenv("HF_HUB_OFFLINE");

    qputenv("HF_ENDPOINT", "http://127.0.0.1:1");  // nothing listens there
    searchFor("fortune");
    QVERIFY2(discover()->message().contains("cannot reach the Hub at http://127.0.0.1:1"),
             qPrintable(discover()->message()));
}

void TestUiModelsPage::serveItLoadsTheAdapter() {
    auto* serve = discover()->findChild<QPushButton*>("serveDownloadButton");
    QVERIFY(serve->isHidden());
    searchFor("bofh");
    QSignalSpy finished(discover()->downloader(), &HubDownload::finished);
    QVERIFY(download("acme/bofh-lora"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const auto result = finished[0][0].value<DownloadResult>();
    QVERIFY(result.adapter);
    QVERIFY(!serve->isHidden());
    QVERIFY(serve->isEnabled());
    QTest::mouseClick(serve, Qt::LeftButton);
    const std::string call = "load bofh-lora " + result.snapshot.toStdString();
    QTRY_VERIFY([&] {
        const auto calls = m_engine->calls();
        return std::find(calls.begin(), calls.end(), call) != calls.end();
    }());
    QTRY_VERIFY2(m_window->models()->message().contains("bofh-lora is served"),
                 qPrintable(m_window->models()->message()));
    // The poller refreshes at once, so the Adapters page lists it.
    QTRY_VERIFY(m_window->adapters()->tableModel()->rowOf("bofh-lora") >= 0);

    // Serving it again under the same name: the engine's refusal is shown.
    QSignalSpy scanned(local(), &LocalModelsPanel::scanned);
    local()->refresh();
    QTRY_COMPARE(scanned.count(), 1);
    QVERIFY(local()->selectRepo("acme/bofh-lora"));
    auto* serveCached = local()->findChild<QPushButton*>("serveCachedButton");
    QVERIFY(serveCached->isEnabled());
    QVERIFY(!local()->findChild<QPushButton*>("useModelButton")->isEnabled());
    QTest::mouseClick(serveCached, Qt::LeftButton);
    QTRY_VERIFY2(
        m_window->models()->message().contains("Serving bofh-lora failed: adapter 'bofh-lora' is already loaded"),
        qPrintable(m_window->models()->message()));
}

void TestUiModelsPage::useAsBaseModel() {
    testing::writeCachedRepo(m_cache, "acme/fortune", QString(40, 'a'), {{"config.json", "{}"}});
    QSignalSpy scanned(local(), &LocalModelsPanel::scanned);
    local()->refresh();
    QTRY_COMPARE(scanned.count(), 1);
    QVERIFY(local()->selectRepo("acme/fortune"));
    QVERIFY(!local()->findChild<QPushButton*>("serveCachedButton")->isEnabled());
    QSignalSpy chosen(m_window, &MainWindow::modelChosen);
    QTest::mouseClick(local()->findChild<QPushButton*>("useModelButton"), Qt::LeftButton);
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(chosen[0][0].toString(), QString("acme/fortune"));
    QVERIFY(m_window->models()->message().contains("next start"));
}

void TestUiModelsPage::firstRunListsCachedModels() {
    {
        FirstRunDialog empty;
        QSignalSpy scanned(&empty, &FirstRunDialog::scanned);
        QTRY_COMPARE(scanned.count(), 1);
        QCOMPARE(empty.modelList()->count(), 0);
        QVERIFY(!empty.findChild<QWidget*>("cachedChoice")->isEnabled());
        QVERIFY(empty.findChild<QLabel*>("firstRunNote")->text().contains("no models yet"));
        QCOMPARE(empty.chosenModel(), QString());  // the demo kit
    }
    testing::writeCachedRepo(m_cache, "acme/fortune", QString(40, 'a'), {{"config.json", "{}"}});
    testing::writeCachedRepo(m_cache, "acme/bofh-lora", QString(40, 'b'), {{"adapter_config.json", "{}"}});
    FirstRunDialog dialog;
    QSignalSpy scanned(&dialog, &FirstRunDialog::scanned);
    QTRY_COMPARE(scanned.count(), 1);
    QCOMPARE(dialog.modelList()->count(), 1);  // models only: an adapter cannot be the base model
    QCOMPARE(dialog.chosenModel(), QString());
    dialog.chooseModel("acme/fortune");
    QCOMPARE(dialog.chosenModel(), QString("acme/fortune"));
    dialog.chooseDemo();
    QCOMPARE(dialog.chosenModel(), QString());
}

QTEST_MAIN(TestUiModelsPage)
#include "tst_ui_models_page.moc"
