// AppSettings: what the desktop app remembers between runs (QSettings, XDG config location): the model,
// adapter folders, engine limits and the server's host/port/key. Command-line options win over these;
// the app writes back what the user changes in the views.
#pragma once

#include <QSettings>
#include <QStringList>

#include "api/engine.h"

namespace loradesk::ui {

struct AppSettings {
    QString modelDir;            // empty = the demo kit
    QStringList adapterFolders;  // imported folders, scanned at start
    QString device = QStringLiteral("auto");
    int maxLoras = 4;
    int maxLorasCpu = 32;
    int maxLoraRank = 64;
    double kvMemoryGb = 0.5;
    QString host = QStringLiteral("127.0.0.1");
    int port = 8080;
    QString apiKey;
    bool serverOnStart = true;
    QString colorScheme = QStringLiteral("system");  // "system", "light" or "dark" (ui/theme.h)

    static AppSettings load(QSettings& settings);
    void save(QSettings& settings) const;
    // Fills the engine options that the command line left at their defaults (`explicitModel` etc. say
    // which ones the user gave), and adds the remembered adapter folders.
    void applyTo(api::EngineOptions& options, bool explicitModel, bool explicitLimits) const;
    void addAdapterFolder(const QString& folder);
};

}  // namespace loradesk::ui

Q_DECLARE_METATYPE(loradesk::ui::AppSettings)
