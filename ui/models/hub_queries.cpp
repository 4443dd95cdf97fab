// Hub searches and sizes over hub_api, with errors as messages.
#include "ui/models/hub_queries.h"

#include <algorithm>

#include "core/error.h"
#include "hub/download/hub_api.h"
#include "hub/hf_cache.h"

namespace loradesk::ui {

namespace {

bool isAdapter(const hub::HubModelSummary& m) {
    return std::any_of(m.tags.begin(), m.tags.end(),
                       [](const std::string& t) { return t == "peft" || t.rfind("base_model:adapter:", 0) == 0; });
}

HubListing listingOf(const hub::HubModelSummary& m) {
    return {QString::fromStdString(m.id), isAdapter(m), m.downloads, m.likes, -1};
}

QString offlineMessage() {
    return QObject::tr("HF_HUB_OFFLINE is set, so the Hub is not asked: unset it to search and download");
}

template <class F>
HubQueryResult guarded(F&& f) {
    HubQueryResult r;
    if (hub::hub_offline()) {
        r.error = offlineMessage();
        return r;
    }
    try {
        f(r);
    } catch (const std::exception& e) {
        r.listings.clear();
        r.error = QString::fromStdString(e.what());
    }
    return r;
}

}  // namespace

HubQueryResult searchHub(const QString& text, int limit) {
    return guarded([&](HubQueryResult& r) {
        const std::string query = text.trimmed().toStdString();
        hub::HubApi api(hub::HubConfig::from_environment());
        hub::HttpSession http;
        for (const auto& m : api.search_models(http, query, limit)) r.listings << listingOf(m);
        const auto id = hub::parse_hub_id(query);
        if (!id) return;
        // With a revision ("org/name@v2") the listing keeps it, so that Download fetches that revision.
        const QString exact = QString::fromStdString(id->text());
        if (std::any_of(r.listings.begin(), r.listings.end(), [&](const HubListing& l) { return l.id == exact; }))
            return;
        const hub::ModelInfo info = api.model_info(http, *id);  // throws the Hub's reason
        HubListing l{exact, false, 0, 0, 0};
        for (const hub::RepoFile& f : info.files) {
            l.bytes += std::max<int64_t>(f.size, 0);
            l.adapter = l.adapter || f.path == "adapter_config.json";
        }
        r.listings.prepend(l);
    });
}

HubQueryResult searchAdapters(const QString& baseModel, int limit) {
    return guarded([&](HubQueryResult& r) {
        hub::HubApi api(hub::HubConfig::from_environment());
        hub::HttpSession http;
        for (const auto& m : api.search_adapters(http, baseModel.toStdString(), limit)) {
            HubListing l = listingOf(m);
            l.adapter = true;  // listed as an adapter of the base model even when its tags say nothing
            r.listings << l;
        }
    });
}

qint64 repoDownloadSize(const QString& id) {
    const auto parsed = hub::parse_hub_id(id.toStdString());
    if (!parsed || hub::hub_offline()) return -1;
    try {
        hub::HubApi api(hub::HubConfig::from_environment());
        hub::HttpSession http;
        qint64 bytes = 0;
        for (const hub::RepoFile& f : api.model_info(http, *parsed).files) bytes += std::max<int64_t>(f.size, 0);
        return bytes;
    } catch (const std::exception&) {
        return -1;  // gated or gone since the listing: the size stays unknown
    }
}

}  // namespace loradesk::ui
