// The Hub questions the Models page asks, as blocking calls for a worker thread (runAsync): a search by id or
// free text, the adapters of a base model, and a repository's download size. Each uses its own HttpSession and
// HubConfig::from_environment() (HF_ENDPOINT, HF_TOKEN), and turns hub_api's errors into their messages, which
// say what to do. Thread-safe; never call from the GUI thread.
#pragma once

#include <QList>
#include <QString>

#include "ui/models/hub_search_model.h"

namespace loradesk::ui {

struct HubQueryResult {
    QList<HubListing> listings;
    QString error;  // empty on success
};

// Repositories whose id contains `text`, most downloaded first. An `org/name` id the search does not list is
// asked for directly, so an exact id always shows, or fails with the Hub's reason (not found, gated, ...); an
// `org/name@revision` is listed with its revision.
HubQueryResult searchHub(const QString& text, int limit = 30);
// The Hub's adapters of `baseModel` (base_model:adapter:<id>), most downloaded first.
HubQueryResult searchAdapters(const QString& baseModel, int limit = 30);
// The bytes a download of `id`'s main revision fetches; -1 when the Hub does not say (gated, gone, offline).
qint64 repoDownloadSize(const QString& id);

}  // namespace loradesk::ui
