// Cache listing: repo folders, their refs and snapshots, blob sizes, and the adapter's base model.
#include "ui/models/hub_cache_scan.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <algorithm>
#include <functional>

#include "hub/hub_id.h"

namespace loradesk::ui {

namespace {

QString readRef(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromLatin1(f.read(128)).trimmed();
}

// "models--org--name" -> "org/name"; ids never hold "--" (hub_id.h), so the split is unambiguous.
QString repoIdOf(const QString& folderName) {
    if (!folderName.startsWith(QLatin1String("models--"))) return {};
    const QStringList parts = folderName.mid(8).split(QStringLiteral("--"));
    if (parts.size() != 2) return {};
    const QString id = parts[0] + QLatin1Char('/') + parts[1];
    return hub::parse_hub_id(id.toStdString()) ? id : QString();
}

// refs/ may nest ("refs/pr/1"); names are relative to refs/.
QMap<QString, QString> readRefs(const QString& refsDir) {
    QMap<QString, QString> refs;
    std::function<void(const QString&)> walk = [&](const QString& sub) {
        const QDir d(refsDir + (sub.isEmpty() ? QString() : QLatin1Char('/') + sub));
        for (const QFileInfo& e : d.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            const QString name = sub.isEmpty() ? e.fileName() : sub + QLatin1Char('/') + e.fileName();
            if (e.isDir())
                walk(name);
            else
                refs.insert(name, readRef(e.filePath()));
        }
    };
    walk({});
    return refs;
}

void readContent(CachedRepo& r) {
    const QDir snap(r.snapshot);
    if (snap.exists(QStringLiteral("adapter_config.json"))) {
        r.kind = CachedRepo::Kind::adapter;
        QFile f(snap.filePath(QStringLiteral("adapter_config.json")));
        if (f.open(QIODevice::ReadOnly))
            r.baseModel = QJsonDocument::fromJson(f.read(1 << 20)).object().value("base_model_name_or_path").toString();
    } else if (snap.exists(QStringLiteral("config.json"))) {
        r.kind = CachedRepo::Kind::model;
    }
}

}  // namespace

CachedRepo scanCachedRepo(const QString& repoFolder) {
    CachedRepo r;
    const QDir repo(repoFolder);
    r.id = repoIdOf(repo.dirName());
    if (r.id.isEmpty()) return r;

    QDateTime newestSnapshot;
    const QFileInfoList snapshots =
        QDir(repo.filePath(QStringLiteral("snapshots"))).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot);
    r.nSnapshots = int(snapshots.size());
    for (const QFileInfo& s : snapshots) {
        if (!newestSnapshot.isValid() || s.lastModified() > newestSnapshot) {
            newestSnapshot = s.lastModified();
            r.commit = s.fileName();
        }
    }
    const QMap<QString, QString> refs = readRefs(repo.filePath(QStringLiteral("refs")));
    if (const QString main = refs.value(QStringLiteral("main"));
        hub::is_commit_hash(main.toStdString()) && repo.exists(QStringLiteral("snapshots/") + main))
        r.commit = main;
    for (auto it = refs.begin(); it != refs.end(); ++it)
        if (it.value() == r.commit) r.refs << it.key();
    if (!r.commit.isEmpty()) {
        r.snapshot = repo.filePath(QStringLiteral("snapshots/") + r.commit);
        readContent(r);
    }

    // Sizes from blobs/, without following links: each blob counts once however many snapshots share it.
    for (const QFileInfo& b : QDir(repo.filePath(QStringLiteral("blobs"))).entryInfoList(QDir::Files | QDir::Hidden)) {
        if (b.fileName().endsWith(QLatin1String(".incomplete"))) {
            r.incomplete = true;
            continue;
        }
        r.bytes += b.size();
        if (!r.modified.isValid() || b.lastModified() > r.modified) r.modified = b.lastModified();
    }
    return r;
}

QList<CachedRepo> scanHubCache(const QString& cacheDir) {
    QList<CachedRepo> repos;
    for (const QFileInfo& e : QDir(cacheDir).entryInfoList({QStringLiteral("models--*")}, QDir::Dirs, QDir::Name)) {
        CachedRepo r = scanCachedRepo(e.filePath());
        if (!r.id.isEmpty()) repos << r;
    }
    std::sort(repos.begin(), repos.end(),
              [](const CachedRepo& a, const CachedRepo& b) { return a.id.compare(b.id, Qt::CaseInsensitive) < 0; });
    return repos;
}

}  // namespace loradesk::ui
