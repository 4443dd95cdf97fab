// StatsHistoryModel: a rolling window of engine snapshots for the dashboard's live charts — one row per
// poll with tokens/s, running, waiting, KV use and the prefix-cache hit rate. Bounded (oldest rows
// drop). GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <deque>

#include "ui/models/engine_poller.h"

namespace loradesk::ui {

class StatsHistoryModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Seconds, TokensPerSecond, Running, Waiting, KvUsedPercent, PrefixHitPercent, ColumnCount };

    explicit StatsHistoryModel(int capacity = 300, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void append(const EngineSnapshot& snapshot);
    double value(int row, Column column) const;

    // Share of prompt tokens served from the prefix cache, over everything so far (0..100).
    static double prefixHitPercent(const api::EngineStats& stats);
    static double kvUsedPercent(const api::EngineStats& stats);

  private:
    struct Row {
        double values[ColumnCount];
    };
    std::deque<Row> m_rows;
    int m_capacity;
};

}  // namespace loradesk::ui
