// What the local Hugging Face cache holds, read from the filesystem as huggingface_hub's scan_cache_dir reads
// it: one CachedRepo per `models--org--name` folder (datasets and spaces are skipped), with the snapshot that
// the default revision names and whether it is a model (config.json) or a PEFT adapter (adapter_config.json).
// Resolving and checking a snapshot for serving is engine/hub's job (hf_cache.h); this only lists. Pure
// filesystem, no network; thread-safe, and meant to run off the GUI thread (a big cache is many stat calls).
#pragma once

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

namespace loradesk::ui {

struct CachedRepo {
    enum class Kind { model, adapter, other };

    QString id;  // "org/name"
    Kind kind = Kind::other;
    QString baseModel;        // adapters: base_model_name_or_path of adapter_config.json
    QString commit;           // the snapshot shown: refs/main's commit, else the newest snapshot's
    QString snapshot;         // <cache>/models--org--name/snapshots/<commit>
    QStringList refs;         // branches and tags in refs/ that point to `commit`
    int nSnapshots = 0;       // revisions on disk
    qint64 bytes = 0;         // blobs on disk (finished ones: an .incomplete file is not counted)
    bool incomplete = false;  // blobs/*.incomplete: an interrupted download (pulling again resumes it)
    QDateTime modified;       // the newest blob's modification time
};

// The repos in `cacheDir` sorted by id; an unreadable or missing folder gives an empty list.
QList<CachedRepo> scanHubCache(const QString& cacheDir);
// One repo folder (`<cache>/models--org--name`); id empty when the folder name is not a repo's.
CachedRepo scanCachedRepo(const QString& repoFolder);

}  // namespace loradesk::ui
