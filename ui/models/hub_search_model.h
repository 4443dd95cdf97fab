// HubSearchModel: the Models page's "Discover" table, one row per repository the Hub listed (a search or the
// adapters of a base model): id, model or adapter, downloads, likes, and the download size once known (the
// Hub's listing has none; each repo's file list gives it, asked for afterwards). GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <QList>

namespace loradesk::ui {

struct HubListing {
    QString id;
    bool adapter = false;  // tagged "peft" or base_model:adapter:...
    qint64 downloads = 0;
    qint64 likes = 0;
    qint64 bytes = -1;  // -1 until the file list was read (or when it could not be: gated, gone)
};

class HubSearchModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Id, Kind, Downloads, Likes, Size, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, IdRole, AdapterRole };

    explicit HubSearchModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setListings(QList<HubListing> listings);
    void setSize(const QString& id, qint64 bytes);
    const HubListing* listingAt(int row) const;
    int rowOf(const QString& id) const;
    QStringList ids() const;

  private:
    QList<HubListing> m_rows;
};

}  // namespace loradesk::ui
