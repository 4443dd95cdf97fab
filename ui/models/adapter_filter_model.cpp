// Filtering and sorting for the adapter table.
#include "ui/models/adapter_filter_model.h"

#include "ui/models/adapter_table_model.h"

namespace loradesk::ui {

AdapterFilterModel::AdapterFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(AdapterTableModel::SortRole);
    setDynamicSortFilter(true);
}

void AdapterFilterModel::setNameFilter(const QString& text) {
    if (text.trimmed() == m_name) return;
    m_name = text.trimmed();
    invalidateFilter();
}

void AdapterFilterModel::setBaseModelFilter(const QString& baseModel) {
    if (baseModel == m_baseModel) return;
    m_baseModel = baseModel;
    invalidateFilter();
}

void AdapterFilterModel::setTierFilter(const QString& tier) {
    if (tier.toLower() == m_tier) return;
    m_tier = tier.toLower();
    invalidateFilter();
}

void AdapterFilterModel::setPinnedOnly(bool pinnedOnly) {
    if (pinnedOnly == m_pinnedOnly) return;
    m_pinnedOnly = pinnedOnly;
    invalidateFilter();
}

bool AdapterFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex idx = sourceModel()->index(sourceRow, AdapterTableModel::Name, sourceParent);
    if (!m_name.isEmpty() && !idx.data(Qt::DisplayRole).toString().contains(m_name, Qt::CaseInsensitive)) return false;
    if (!m_baseModel.isEmpty() && idx.data(AdapterTableModel::BaseModelRole).toString() != m_baseModel) return false;
    if (!m_tier.isEmpty() && idx.data(AdapterTableModel::TierRole).toString() != m_tier) return false;
    if (m_pinnedOnly && !idx.data(AdapterTableModel::PinnedRole).toBool()) return false;
    return true;
}

}  // namespace loradesk::ui
