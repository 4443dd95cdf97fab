// Rolling dashboard history.
#include "ui/models/stats_history_model.h"

namespace loradesk::ui {

StatsHistoryModel::StatsHistoryModel(int capacity, QObject* parent)
    : QAbstractTableModel(parent), m_capacity(std::max(2, capacity)) {}

int StatsHistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }
int StatsHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StatsHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Seconds:
            return tr("Time (s)");
        case TokensPerSecond:
            return tr("Tokens/s");
        case Running:
            return tr("Running");
        case Waiting:
            return tr("Waiting");
        case KvUsedPercent:
            return tr("KV used %");
        case PrefixHitPercent:
            return tr("Prefix hit %");
        default:
            return {};
    }
}

QVariant StatsHistoryModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
    return m_rows[size_t(index.row())].values[index.column()];
}

double StatsHistoryModel::value(int row, Column column) const {
    if (row < 0 || row >= int(m_rows.size()) || column < 0 || column >= ColumnCount) return 0;
    return m_rows[size_t(row)].values[column];
}

double StatsHistoryModel::prefixHitPercent(const api::EngineStats& s) {
    if (s.prompt_tokens_total == 0) return 0;
    return 100.0 * double(s.cached_tokens_total) / double(s.prompt_tokens_total);
}

double StatsHistoryModel::kvUsedPercent(const api::EngineStats& s) {
    if (s.kv_pages_total <= 0) return 0;
    return 100.0 * double(s.kv_pages_total - s.kv_pages_free) / double(s.kv_pages_total);
}

void StatsHistoryModel::append(const EngineSnapshot& snapshot) {
    const api::EngineStats& s = snapshot.stats;
    if (int(m_rows.size()) >= m_capacity) {
        beginRemoveRows({}, 0, 0);
        m_rows.pop_front();
        endRemoveRows();
    }
    Row row{};
    row.values[Seconds] = snapshot.secondsSinceStart;
    row.values[TokensPerSecond] = s.tokens_per_second;
    row.values[Running] = s.running;
    row.values[Waiting] = s.waiting;
    row.values[KvUsedPercent] = kvUsedPercent(s);
    row.values[PrefixHitPercent] = prefixHitPercent(s);
    const int at = int(m_rows.size());
    beginInsertRows({}, at, at);
    m_rows.push_back(row);
    endInsertRows();
}

}  // namespace loradesk::ui
