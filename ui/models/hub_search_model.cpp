// The Hub listing table.
#include "ui/models/hub_search_model.h"

#include "ui/models/format.h"

namespace loradesk::ui {

HubSearchModel::HubSearchModel(QObject* parent) : QAbstractTableModel(parent) {}

int HubSearchModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }
int HubSearchModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant HubSearchModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Id:
            return tr("Repository");
        case Kind:
            return tr("Kind");
        case Downloads:
            return tr("Downloads");
        case Likes:
            return tr("Likes");
        case Size:
            return tr("Size");
        default:
            return {};
    }
}

QHash<int, QByteArray> HubSearchModel::roleNames() const {
    auto names = QAbstractTableModel::roleNames();
    names.insert(SortRole, "sortValue");
    names.insert(IdRole, "repoId");
    names.insert(AdapterRole, "adapter");
    return names;
}

QVariant HubSearchModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size()) return {};
    const HubListing& r = m_rows[index.row()];
    const int c = index.column();
    switch (role) {
        case Qt::DisplayRole:
            if (c == Id) return r.id;
            if (c == Kind) return r.adapter ? tr("Adapter") : tr("Model");
            if (c == Downloads) return formatCount(uint64_t(r.downloads));
            if (c == Likes) return formatCount(uint64_t(r.likes));
            if (c == Size) return r.bytes < 0 ? QStringLiteral("…") : formatBytes(uint64_t(r.bytes));
            return {};
        case Qt::TextAlignmentRole:
            return c >= Downloads ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
        case SortRole:
            if (c == Downloads) return r.downloads;
            if (c == Likes) return r.likes;
            if (c == Size) return r.bytes;
            return data(index, Qt::DisplayRole);
        case IdRole:
            return r.id;
        case AdapterRole:
            return r.adapter;
        default:
            return {};
    }
}

void HubSearchModel::setListings(QList<HubListing> listings) {
    beginResetModel();
    m_rows = std::move(listings);
    endResetModel();
}

void HubSearchModel::setSize(const QString& id, qint64 bytes) {
    const int row = rowOf(id);
    if (row < 0) return;
    m_rows[row].bytes = bytes;
    emit dataChanged(index(row, Size), index(row, Size));
}

const HubListing* HubSearchModel::listingAt(int row) const {
    return row >= 0 && row < m_rows.size() ? &m_rows[row] : nullptr;
}

int HubSearchModel::rowOf(const QString& id) const {
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].id == id) return i;
    return -1;
}

QStringList HubSearchModel::ids() const {
    QStringList out;
    for (const HubListing& r : m_rows) out << r.id;
    return out;
}

}  // namespace loradesk::ui
