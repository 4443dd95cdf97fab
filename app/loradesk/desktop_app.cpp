// Desktop mode: wires the window, the engine host, the HTTP server, the tray and the settings.
#include <QSettings>

#include "app_runtime.h"
#include "server_factory.h"
#include "ui/engine_host.h"
#include "ui/first_run_dialog.h"
#include "ui/main_window.h"
#include "ui/server_page.h"
#include "ui/settings_page.h"
#include "ui/single_instance.h"
#include "ui/theme.h"
#include "ui/tray_icon.h"

namespace loradesk::app {

namespace {

QString instanceName() {
    const QString user = qEnvironmentVariable("USER", QStringLiteral("user"));
    return QStringLiteral("loradesk-") + user;
}

void rememberLaunch(QSettings& store, ui::AppSettings& settings, const LaunchOptions& launch) {
    const api::EngineOptions& e = launch.serve.engine;
    // The reference as typed: a Hub id stays an id, so a later pull of a newer revision is what starts next time.
    if (launch.explicitModel && !launch.serve.demo)
        settings.modelDir = QString::fromStdString(launch.modelReference.empty() ? e.model_dir : launch.modelReference);
    if (launch.explicitLimits) {
        settings.device = QString::fromStdString(e.device);
        settings.maxLoras = e.max_loras;
        settings.maxLorasCpu = e.max_loras_cpu;
        settings.maxLoraRank = e.max_lora_rank;
        settings.kvMemoryGb = e.kv_memory_gb;
        settings.fp8WeightOnly = e.fp8_weight_only;
    }
    settings.save(store);
}

// The first start asks demo kit or cached model, and remembers the answer as --model would (a Hub id as typed).
// Closing the dialog starts the demo kit without remembering, so the question comes again next time.
void askFirstRunChoice(QSettings& store, ui::AppSettings& settings) {
    ui::FirstRunDialog dialog;
    if (dialog.exec() != QDialog::Accepted) return;
    settings.modelDir = dialog.chosenModel();
    settings.save(store);
}

}  // namespace

int runDesktop(QApplication& app, LaunchOptions launch) {
    ui::SingleInstance instance(instanceName());
    if (!instance.claim()) return 0;  // the running window was raised

    QSettings store;
    ui::AppSettings settings = ui::AppSettings::load(store);
    ui::applyColorScheme(ui::colorSchemeFromName(settings.colorScheme));
    if (needsFirstRunChoice(launch, store)) askFirstRunChoice(store, settings);
    const std::string problem = resolveModel(launch, settings);

    ui::MainWindow window;
    ui::TrayIcon* tray = ui::TrayIcon::createIfAvailable(&window);
    QObject::connect(&instance, &ui::SingleInstance::raiseRequested, &window, [&window] {
        window.show();
        window.raise();
        window.activateWindow();
    });
    window.setServerConfig({launch.serve.host, launch.serve.port, launch.serve.api_key});
    window.settings()->setSettings(settings);
    QObject::connect(window.settings(), &ui::SettingsPage::settingsSaved, &window, [&](const ui::AppSettings& s) {
        settings = s;
        settings.save(store);
    });
    QObject::connect(window.settings(), &ui::SettingsPage::colorSchemeChanged, &window, [&](const QString& scheme) {
        ui::applyColorScheme(ui::colorSchemeFromName(scheme));
        settings.colorScheme = scheme;
        settings.save(store);
    });
    // The Models page's "use as base model": remembered as --model ID would be, served from the next start.
    QObject::connect(&window, &ui::MainWindow::modelChosen, &window, [&](const QString& id) {
        settings.modelDir = id;
        settings.save(store);
        window.settings()->setSettings(settings);
    });
    window.show();
    if (!problem.empty()) {
        window.showEngineFailure(QString::fromStdString(problem));
        return app.exec();
    }

    ui::EngineHost host(api::create_engine);
    std::unique_ptr<ui::ServerControl> server;
    bool autoStarting = false;
    QObject::connect(&host, &ui::EngineHost::ready, &window, [&] {
        window.setEngine(host.engine());
        rememberLaunch(store, settings, launch);
        window.settings()->setSettings(settings);
        std::vector<std::string> roots = launch.serve.engine.adapter_dirs;
        roots.insert(roots.end(), launch.serve.extra_adapter_roots.begin(), launch.serve.extra_adapter_roots.end());
        server = makeServerControl(host.engine(), roots);
        window.setServerControl(server.get());
        // The automatic start uses this launch's options; only starts from the Server view are remembered.
        autoStarting = true;
        if (server && settings.serverOnStart) window.server()->startServer();
        autoStarting = false;
    });
    QObject::connect(&host, &ui::EngineHost::failed, &window, &ui::MainWindow::showEngineFailure);
    QObject::connect(&window, &ui::MainWindow::folderImported, &window, [&](const QString& folder) {
        settings.addAdapterFolder(folder);
        settings.save(store);
        window.settings()->setSettings(settings);
    });
    QObject::connect(&window, &ui::MainWindow::serverConfigChanged, &window, [&](const ui::ServerConfig& c) {
        if (autoStarting) return;
        settings.host = QString::fromStdString(c.host);
        settings.port = c.port;
        settings.apiKey = QString::fromStdString(c.api_key);
        settings.save(store);
    });
    if (tray)
        QObject::connect(window.server(), &ui::ServerPage::runningChanged, tray,
                         [tray](bool, const QString& url) { tray->showServing(url); });

    window.showStarting(QObject::tr("Loading %1%2 …")
                            .arg(QString::fromStdString(launch.serve.engine.model_dir),
                                 launch.serve.demo ? QObject::tr(" (demo kit)") : QString()));
    host.start(launch.serve.engine);
    const int rc = app.exec();
    // Stop serving before the host shuts the engine down; the window goes last.
    window.setServerControl(nullptr);
    server.reset();
    return rc;
}

}  // namespace loradesk::app
