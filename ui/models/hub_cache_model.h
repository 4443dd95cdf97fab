// HubCacheModel: the Models page's "On this machine" table, one row per repository of the local Hugging Face
// cache (scanHubCache), with its kind, an adapter's base model, the revision on disk and the size. The scan
// runs elsewhere (off the GUI thread); setRepos() replaces the rows. GUI thread only.
#pragma once

#include <QAbstractTableModel>

#include "ui/models/hub_cache_scan.h"

namespace loradesk::ui {

class HubCacheModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Id, Kind, BaseModel, Revision, Size, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // raw values (bytes as numbers)
        IdRole,
        KindRole,  // "model", "adapter" or "other"
        SnapshotRole,
        CommitRole,
        BaseModelRole,
    };

    explicit HubCacheModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setRepos(QList<CachedRepo> repos);
    const QList<CachedRepo>& repos() const { return m_rows; }
    const CachedRepo* repoAt(int row) const;
    int rowOf(const QString& id) const;  // -1 when not cached
    QStringList modelIds() const;        // the rows that are models (config.json), for choosing what to serve

    static QString kindName(CachedRepo::Kind kind);

  private:
    QVariant display(const CachedRepo& r, int column) const;

    QList<CachedRepo> m_rows;
};

}  // namespace loradesk::ui
