// AdapterHistoryModel: one adapter's per-minute traffic from Engine::adapter_history, as a table the
// detail view charts (requests/min, tokens/s, TTFT p50/p95, errors). Replaced wholesale on refresh.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "api/engine.h"

namespace loradesk::ui {

class AdapterHistoryModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Minute, Requests, TokensPerSecond, TtftP50, TtftP95, Errors, ColumnCount };
    enum Role { ValueRole = Qt::UserRole + 1 };  // the raw number (minute as unix seconds)

    explicit AdapterHistoryModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setPoints(std::vector<api::StatsPoint> points);  // sorted by minute here
    double value(int row, Column column) const;

  private:
    std::vector<api::StatsPoint> m_points;
};

}  // namespace loradesk::ui
