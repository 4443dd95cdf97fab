// Settings persistence. Out-of-range values from a hand-edited file fall back to the defaults.
#include "ui/models/app_settings.h"

#include <QDir>

namespace loradesk::ui {

namespace {

int intIn(QSettings& s, const char* key, int fallback, int lo, int hi) {
    bool ok = false;
    const int v = s.value(QLatin1String(key), fallback).toInt(&ok);
    return ok && v >= lo && v <= hi ? v : fallback;
}

}  // namespace

AppSettings AppSettings::load(QSettings& s) {
    AppSettings a;
    a.modelDir = s.value(QStringLiteral("engine/model")).toString();
    a.adapterFolders = s.value(QStringLiteral("engine/adapterFolders")).toStringList();
    const QString device = s.value(QStringLiteral("engine/device"), a.device).toString();
    if (device == QLatin1String("auto") || device == QLatin1String("cpu") || device == QLatin1String("cuda"))
        a.device = device;
    a.maxLoras = intIn(s, "engine/maxLoras", a.maxLoras, 1, 256);
    a.maxLorasCpu = intIn(s, "engine/maxLorasCpu", a.maxLorasCpu, 1, 4096);
    a.maxLoraRank = intIn(s, "engine/maxLoraRank", a.maxLoraRank, 1, 1024);
    bool ok = false;
    const double kv = s.value(QStringLiteral("engine/kvMemoryGb"), a.kvMemoryGb).toDouble(&ok);
    if (ok && kv > 0 && kv <= 4096) a.kvMemoryGb = kv;
    a.fp8WeightOnly = s.value(QStringLiteral("engine/fp8WeightOnly"), a.fp8WeightOnly).toBool();
    a.host = s.value(QStringLiteral("server/host"), a.host).toString();
    a.port = intIn(s, "server/port", a.port, 0, 65535);
    a.apiKey = s.value(QStringLiteral("server/apiKey")).toString();
    a.serverOnStart = s.value(QStringLiteral("server/startWithApp"), a.serverOnStart).toBool();
    const QString scheme = s.value(QStringLiteral("ui/colorScheme"), a.colorScheme).toString();
    if (scheme == QLatin1String("light") || scheme == QLatin1String("dark")) a.colorScheme = scheme;
    return a;
}

void AppSettings::save(QSettings& s) const {
    s.setValue(QStringLiteral("engine/model"), modelDir);
    s.setValue(QStringLiteral("engine/adapterFolders"), adapterFolders);
    s.setValue(QStringLiteral("engine/device"), device);
    s.setValue(QStringLiteral("engine/maxLoras"), maxLoras);
    s.setValue(QStringLiteral("engine/maxLorasCpu"), maxLorasCpu);
    s.setValue(QStringLiteral("engine/maxLoraRank"), maxLoraRank);
    s.setValue(QStringLiteral("engine/kvMemoryGb"), kvMemoryGb);
    s.setValue(QStringLiteral("engine/fp8WeightOnly"), fp8WeightOnly);
    s.setValue(QStringLiteral("server/host"), host);
    s.setValue(QStringLiteral("server/port"), port);
    s.setValue(QStringLiteral("server/apiKey"), apiKey);
    s.setValue(QStringLiteral("server/startWithApp"), serverOnStart);
    s.setValue(QStringLiteral("ui/colorScheme"), colorScheme);
    s.sync();
}

void AppSettings::applyTo(api::EngineOptions& o, bool explicitModel, bool explicitLimits) const {
    if (!explicitModel && !modelDir.isEmpty()) o.model_dir = modelDir.toStdString();
    if (!explicitLimits) {
        o.device = device.toStdString();
        o.max_loras = maxLoras;
        o.max_loras_cpu = maxLorasCpu;
        o.max_lora_rank = maxLoraRank;
        o.kv_memory_gb = kvMemoryGb;
        o.fp8_weight_only = fp8WeightOnly;
    }
    for (const QString& folder : adapterFolders) {
        const std::string f = folder.toStdString();
        if (std::find(o.adapter_dirs.begin(), o.adapter_dirs.end(), f) == o.adapter_dirs.end())
            o.adapter_dirs.push_back(f);
    }
}

void AppSettings::addAdapterFolder(const QString& folder) {
    const QString clean = QDir::cleanPath(folder);
    if (!adapterFolders.contains(clean)) adapterFolders << clean;
}

}  // namespace loradesk::ui
