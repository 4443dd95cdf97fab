// Writes repositories into a folder in huggingface_hub's cache layout, as transformers leaves them after a
// download: blobs/<hash> with the bytes, snapshots/<commit>/<path> -> ../../blobs/<hash> (relative links, one
// more ../ per sub-folder), refs/<branch> holding the commit without a newline. For the UI tests that list a
// cache (tests/hub/tst_hub_cache.cpp covers resolving one).
#pragma once

#include <QByteArray>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QMap>
#include <QString>
#include <QStringList>
#include <filesystem>

namespace loradesk::testing {

inline bool writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// One revision of `id` ("org/name") at `commit` (40 hex) with `files` (repo path -> bytes); `refs` point to it.
inline QString writeCachedRepo(const QString& cache, const QString& id, const QString& commit,
                               const QMap<QString, QByteArray>& files, const QStringList& refs = {"main"}) {
    const QString repo = cache + "/models--" + QString(id).replace('/', "--");
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QString blob =
            QString::fromLatin1(QCryptographicHash::hash(it.value(), QCryptographicHash::Sha256).toHex());
        writeFile(repo + "/blobs/" + blob, it.value());
        const QString link = repo + "/snapshots/" + commit + "/" + it.key();
        QDir().mkpath(QFileInfo(link).path());
        const QString up = QString("../").repeated(2 + int(it.key().count('/')));
        std::filesystem::create_symlink((up + "blobs/" + blob).toStdString(), link.toStdString());
    }
    for (const QString& ref : refs) writeFile(repo + "/refs/" + ref, commit.toLatin1());
    return repo;
}

}  // namespace loradesk::testing
