// Screenshot run: puts every view of the main window into a representative state (scripted engine) and
// saves a PNG of each with QWidget::grab(). CTest writes them into the build tree and checks they are
// real images; `LORADESK_SCREENSHOT_DIR=docs/screenshots ./tst_ui_screenshots` refreshes the README's.
#include <QDir>
#include <QImage>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>

#include "fake_server_control.h"
#include "scripted_engine.h"
#include "ui/adapter_detail_page.h"
#include "ui/adapters_page.h"
#include "ui/chat_panel.h"
#include "ui/main_window.h"
#include "ui/models/engine_poller.h"
#include "ui/models/log_model.h"
#include "ui/playground_page.h"
#include "ui/server_page.h"

using namespace loradesk;
using namespace loradesk::ui;

class TestUiScreenshots : public QObject {
    Q_OBJECT
  private slots:
    void everyView();
};

void TestUiScreenshots::everyView() {
    const QString dir = qEnvironmentVariableIsSet("LORADESK_SCREENSHOT_DIR")
                            ? qEnvironmentVariable("LORADESK_SCREENSHOT_DIR")
                            : QStringLiteral(LORADESK_BINARY_DIR "/screenshots");
    QVERIFY(QDir().mkpath(dir));
    auto engine = std::make_shared<testing::ScriptedEngine>();
    testing::FakeServerControl server;
    MainWindow window;
    window.resize(1280, 800);
    window.poller()->setInterval(40);
    window.setEngine(engine);
    window.setServerControl(&server);
    window.setServerConfig({"127.0.0.1", 8080, "sk-loradesk-3f9a0c1d"});
    window.show();
    // A few polls with a changing rate give the live chart a shape.
    for (double tps : {12.0, 35.0, 48.0, 41.0, 57.0, 62.0}) {
        engine->setTokensPerSecond(tps);
        QSignalSpy updated(window.poller(), &EnginePoller::updated);
        QTRY_VERIFY(updated.count() >= 1);
    }
    window.logModel()->append(log::Level::info, "model Qwen3-0.6B loaded on cpu (596 M parameters, 1.2 GiB)");
    window.logModel()->append(log::Level::info, "adapter de loaded into slot 0 (8.0 MiB, 3.1 ms)");
    window.logModel()->append(log::Level::warn,
                              "adapter llama-sql targets q_proj with in_features 2048 but the base model has 1024");
    window.logModel()->append(log::Level::info,
                              "request req-7 (es): 14 prompt tokens, 9 cached, 32 generated, TTFT 12 ms");

    PlaygroundPage* playground = window.playground();
    playground->setCompare(true);
    playground->left()->setTarget("de");
    playground->right()->setTarget("bofh");
    playground->setPrompt("Why is the printer not working?");
    playground->send();
    QTRY_VERIFY(!playground->left()->busy() && !playground->right()->busy());

    QVERIFY(window.server()->startServer());
    QVERIFY(window.adapters()->selectAdapter("de"));
    QSignalSpy loaded(window.detail(), &AdapterDetailPage::loaded);
    window.detail()->showAdapter("de");
    QTRY_COMPARE(loaded.count(), 1);

    const char* files[] = {"dashboard", "adapters", "adapter_detail", "playground", "server", "logs", "settings"};
    for (int p = 0; p < MainWindow::PageCount; ++p) {
        window.showPage(MainWindow::Page(p));
        QTest::qWait(30);
        const QImage image = window.grab().toImage();
        QVERIFY(image.width() >= 1000 && image.height() >= 600);
        const QString path = QDir(dir).filePath(QString::fromLatin1(files[p]) + ".png");
        QVERIFY2(image.save(path), qPrintable(path));
        QVERIFY(QImage(path).size() == image.size());
    }
    window.setServerControl(nullptr);
}

QTEST_MAIN(TestUiScreenshots)
#include "tst_ui_screenshots.moc"
