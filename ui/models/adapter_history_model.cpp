// Per-minute adapter history as a table.
#include "ui/models/adapter_history_model.h"

#include <QDateTime>
#include <algorithm>

namespace loradesk::ui {

AdapterHistoryModel::AdapterHistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

int AdapterHistoryModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_points.size());
}
int AdapterHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AdapterHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Minute:
            return tr("Minute");
        case Requests:
            return tr("Requests/min");
        case TokensPerSecond:
            return tr("Tokens/s");
        case TtftP50:
            return tr("TTFT p50 (ms)");
        case TtftP95:
            return tr("TTFT p95 (ms)");
        case Errors:
            return tr("Errors");
        default:
            return {};
    }
}

double AdapterHistoryModel::value(int row, Column column) const {
    if (row < 0 || row >= int(m_points.size())) return 0;
    const api::StatsPoint& p = m_points[size_t(row)];
    switch (column) {
        case Minute:
            return double(p.minute_unix);
        case Requests:
            return double(p.requests);
        case TokensPerSecond:
            return double(p.completion_tokens) / 60.0;
        case TtftP50:
            return p.ttft_p50_ms;
        case TtftP95:
            return p.ttft_p95_ms;
        case Errors:
            return double(p.errors);
        default:
            return 0;
    }
}

QVariant AdapterHistoryModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const double v = value(index.row(), Column(index.column()));
    if (role == ValueRole) return v;
    if (role != Qt::DisplayRole) return {};
    if (index.column() == Minute)
        return QDateTime::fromSecsSinceEpoch(qint64(v)).toString(QStringLiteral("yyyy-MM-dd hh:mm"));
    if (index.column() == Requests || index.column() == Errors) return qulonglong(v);
    return QString::number(v, 'f', 1);
}

void AdapterHistoryModel::setPoints(std::vector<api::StatsPoint> points) {
    std::sort(points.begin(), points.end(),
              [](const api::StatsPoint& a, const api::StatsPoint& b) { return a.minute_unix < b.minute_unix; });
    beginResetModel();
    m_points = std::move(points);
    endResetModel();
}

}  // namespace loradesk::ui
