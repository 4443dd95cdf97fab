// AdapterTableModel: the adapters the engine knows, one row each, from Engine::adapters() snapshots.
// setAdapters() merges a new snapshot by name (rows update in place, vanished ones are removed, new ones
// appended), so selections and sorting survive the periodic refresh. GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "api/engine.h"

namespace loradesk::ui {

class AdapterTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Name, Rank, Alpha, Targets, Size, Tier, Pinned, Requests, Tokens, LastUsed, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // raw value for sorting (numbers as numbers)
        NameRole,
        BaseModelRole,
        TierRole,
        PinnedRole,
        CompatibleRole,
    };

    explicit AdapterTableModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setAdapters(std::vector<api::AdapterInfo> adapters);
    // "now" for the "last used" column; injectable so tests are deterministic.
    void setClock(int64_t nowUnix) { m_nowUnix = nowUnix; }

    const api::AdapterInfo* adapterAt(int row) const;
    int rowOf(const QString& name) const;  // -1 when unknown
    QStringList baseModels() const;        // distinct, sorted; for the filter combo

  private:
    QVariant display(const api::AdapterInfo& a, int column) const;
    QVariant sortValue(const api::AdapterInfo& a, int column) const;

    std::vector<api::AdapterInfo> m_rows;
    int64_t m_nowUnix = 0;  // 0 = wall clock
};

}  // namespace loradesk::ui
