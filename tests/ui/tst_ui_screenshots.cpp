// Screenshot run: the main window over the real engine (CPU runner, demo kit: a small trained Qwen3 and
// its de/es/it/bofh adapters) after some real traffic, every view in a representative state, a PNG of
// each saved with QWidget::grab(). CTest writes them into the build tree and checks they are real
// images; `LORADESK_SCREENSHOT_DIR=docs/screenshots ./tst_ui_screenshots` refreshes the README's. The Models
// page searches tests/hub/fake_hub.py (serving the demo kit as Hub repositories) and downloads an adapter from it
// with the real pull() into a temporary Hugging Face cache.
#include <QDir>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <iterator>
#include <thread>

#include "demo_kit.h"
#include "fake_server_control.h"
#include "hub/fake_hub_process.h"
#include "ui/adapter_detail_page.h"
#include "ui/adapters_page.h"
#include "ui/chat_panel.h"
#include "ui/discover_panel.h"
#include "ui/engine_host.h"
#include "ui/local_models_panel.h"
#include "ui/main_window.h"
#include "ui/models/engine_poller.h"
#include "ui/models/hub_download.h"
#include "ui/models/hub_search_model.h"
#include "ui/models_page.h"
#include "ui/playground_page.h"
#include "ui/server_page.h"
#include "ui/theme.h"

using namespace loradesk;
using namespace loradesk::ui;

class TestUiScreenshots : public QObject {
    Q_OBJECT
  private slots:
    void everyView();

  private:
    // The Models page: a search of the fake Hub for "fortune", the model and the bofh adapter downloaded.
    void fillModelsPage(MainWindow& window, const cli::DemoKit& kit, testing::FakeHub& hub, const QString& cache);
};

namespace {

// Real requests through the facade, drained on a worker thread, so statistics and charts have data.
void sendTraffic(api::Engine& engine, const std::vector<std::string>& models) {
    std::vector<std::thread> workers;
    for (const auto& model : models) {
        workers.emplace_back([&engine, model] {
            api::GenerateRequest r;
            r.model = model;
            r.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Tell me something."}}});
            r.sampling.temperature = 0.7f;
            r.sampling.seed = 7;
            r.stop.max_tokens = 24;
            auto s = engine.submit(r);
            if (!s.ok()) return;
            for (;;) {
                auto ev = s.value()->next(std::chrono::milliseconds(1000));
                if (ev && !std::holds_alternative<api::TokenEvent>(*ev)) return;
            }
        });
    }
    for (auto& w : workers) w.join();
}

bool saveShot(QWidget& window, const QString& dir, const QString& name) {
    QTest::qWait(50);
    const QImage image = window.grab().toImage();
    const QString path = QDir(dir).filePath(name + ".png");
    return image.width() >= 1000 && image.height() >= 600 && image.save(path) && QImage(path).size() == image.size();
}

}  // namespace

void TestUiScreenshots::fillModelsPage(MainWindow& window, const cli::DemoKit& kit, testing::FakeHub& hub,
                                       const QString& cache) {
    QStringList repos{"--repo", "loradesk/fortune-6m=" + QString::fromStdString(kit.model_dir)};
    for (const auto& [name, dir] : kit.adapters)
        repos += {"--repo",
                  QString("loradesk/fortune-%1=%2").arg(QString::fromStdString(name), QString::fromStdString(dir))};
    QVERIFY(hub.start(repos));
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    qputenv("HF_HUB_CACHE", cache.toUtf8());
    DiscoverPanel* discover = window.models()->discover();
    QSignalSpy searched(discover, &DiscoverPanel::searchDone);
    discover->search("fortune");
    QTRY_COMPARE_WITH_TIMEOUT(searched.count(), 1, 20000);
    QSignalSpy downloaded(discover->downloader(), &HubDownload::finished);
    for (const char* id : {"loradesk/fortune-6m", "loradesk/fortune-bofh"}) {  // the adapter last: "Serve it" shows
        QVERIFY(discover->selectListing(id));
        const int before = int(downloaded.count());
        discover->downloadSelected();
        QTRY_COMPARE_WITH_TIMEOUT(int(downloaded.count()), before + 1, 60000);
    }
    QTRY_VERIFY_WITH_TIMEOUT(  // every size in, so the table shows no "…"
        [&] {
            for (int r = 0; r < discover->results()->rowCount(); ++r)
                if (discover->results()->listingAt(r)->bytes < 0) return false;
            return discover->results()->rowCount() == 5;
        }(),
        10000);
    QSignalSpy scanned(window.models()->local(), &LocalModelsPanel::scanned);
    window.models()->local()->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(scanned.count() >= 1, 10000);
    QVERIFY(window.models()->local()->selectRepo("loradesk/fortune-bofh"));
}

void TestUiScreenshots::everyView() {
    const auto kit = cli::find_demo_kit();
    if (!kit) QSKIP("the demo kit (resources/demo) is not available");
    const QString dir = qEnvironmentVariableIsSet("LORADESK_SCREENSHOT_DIR")
                            ? qEnvironmentVariable("LORADESK_SCREENSHOT_DIR")
                            : QStringLiteral(LORADESK_BINARY_DIR "/screenshots");
    QVERIFY(QDir().mkpath(dir));
    QTemporaryDir data;
    api::EngineOptions o;
    o.model_dir = kit->model_dir;
    o.named_adapters = kit->adapters;
    o.device = "cpu";
    o.data_dir = data.path().toStdString();
    o.kv_memory_gb = 0.05;
    EngineHost host(api::create_engine);
    QSignalSpy ready(&host, &EngineHost::ready);
    QSignalSpy failed(&host, &EngineHost::failed);
    host.start(o);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() + failed.count() == 1, 60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    api::Engine& engine = *host.engine();

    testing::FakeServerControl server;
    MainWindow window;
    window.resize(1280, 800);
    window.poller()->setInterval(100);
    window.setEngine(host.engine());
    window.setServerControl(&server);
    window.setServerConfig({"127.0.0.1", 8080, ""});
    window.show();
    // Traffic in waves between polls gives the dashboard's live chart and the counters a shape.
    for (const auto& wave :
         std::vector<std::vector<std::string>>{{"de", "es"}, {"de", "it", "bofh"}, {"de"}, {"es", "fortune-6m"}}) {
        sendTraffic(engine, wave);
        QSignalSpy updated(window.poller(), &EnginePoller::updated);
        QTRY_VERIFY(updated.count() >= 1);
    }
    QVERIFY(engine.pin_adapter("de", true).ok());

    PlaygroundPage* playground = window.playground();
    playground->setCompare(true);
    playground->left()->setTarget("de");
    playground->right()->setTarget("bofh");
    playground->findChild<QDoubleSpinBox*>("temperature")->setValue(0);
    playground->findChild<QSpinBox*>("maxTokens")->setValue(48);
    playground->setPrompt("Tell me a fortune.");
    playground->send();
    QTRY_VERIFY_WITH_TIMEOUT(!playground->left()->busy() && !playground->right()->busy(), 60000);

    QVERIFY(window.server()->startServer());
    QTRY_VERIFY(window.adapters()->selectAdapter("de"));
    QSignalSpy loaded(window.detail(), &AdapterDetailPage::loaded);
    window.detail()->showAdapter("de");
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() == 1, 30000);

    testing::FakeHub hub;
    fillModelsPage(window, *kit, hub, data.filePath("hf-cache"));
    window.models()->showTab(ModelsPage::Discover);

    const char* files[] = {"dashboard",  "adapters", "adapter_detail", "models",
                           "playground", "server",   "logs",           "settings"};
    static_assert(std::size(files) == MainWindow::PageCount);
    for (int p = 0; p < MainWindow::PageCount; ++p) {
        window.showPage(MainWindow::Page(p));
        QVERIFY2(saveShot(window, dir, files[p]), files[p]);
    }
    window.showPage(MainWindow::Models);
    window.models()->showTab(ModelsPage::Local);
    QVERIFY(saveShot(window, dir, "models_local"));
    // The dark palette (Settings > Appearance), on the page with the most controls.
    window.models()->showTab(ModelsPage::Discover);
    applyColorScheme(ColorScheme::dark);
    QVERIFY(saveShot(window, dir, "models_dark"));
    applyColorScheme(ColorScheme::system);
}

QTEST_MAIN(TestUiScreenshots)
#include "tst_ui_screenshots.moc"
