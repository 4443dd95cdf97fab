// AppSettings: what the desktop app remembers between runs (QSettings, XDG config location): the model,
// adapter folders, engine limits (the fp8 route among them) and the server's host/port/key. Command-line options win
// over these; the app writes back what the user changes in the views.
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
    // FP8 checkpoints on the CUDA runner: false = the W8A8 fp8 GEMM from a few tokens per step (faster batches and
    // prefill); true = activations stay bf16 (EngineOptions::fp8_weight_only, numerics independent of the batch).
    bool fp8WeightOnly = false;
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
