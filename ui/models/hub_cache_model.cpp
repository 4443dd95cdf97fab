// The cached-repository table: display text, tooltips, raw sort values, roles.
#include "ui/models/hub_cache_model.h"

#include "ui/models/format.h"

namespace loradesk::ui {

HubCacheModel::HubCacheModel(QObject* parent) : QAbstractTableModel(parent) {}

int HubCacheModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }
int HubCacheModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString HubCacheModel::kindName(CachedRepo::Kind kind) {
    switch (kind) {
        case CachedRepo::Kind::model:
            return QStringLiteral("model");
        case CachedRepo::Kind::adapter:
            return QStringLiteral("adapter");
        default:
            return QStringLiteral("other");
    }
}

QVariant HubCacheModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Id:
            return tr("Repository");
        case Kind:
            return tr("Kind");
        case BaseModel:
            return tr("Base model");
        case Revision:
            return tr("Revision");
        case Size:
            return tr("Size on disk");
        default:
            return {};
    }
}

QHash<int, QByteArray> HubCacheModel::roleNames() const {
    auto names = QAbstractTableModel::roleNames();
    names.insert(SortRole, "sortValue");
    names.insert(IdRole, "repoId");
    names.insert(KindRole, "kind");
    names.insert(SnapshotRole, "snapshot");
    names.insert(CommitRole, "commit");
    names.insert(BaseModelRole, "baseModel");
    return names;
}

QVariant HubCacheModel::display(const CachedRepo& r, int column) const {
    switch (column) {
        case Id:
            return r.id;
        case Kind:
            if (r.kind == CachedRepo::Kind::model) return tr("Model");
            if (r.kind == CachedRepo::Kind::adapter) return tr("Adapter");
            return tr("Other");
        case BaseModel:
            return r.baseModel;
        case Revision: {
            // "main · 1a2b3c4", as the Hub shows a commit; other revisions on disk are counted.
            QString text = r.refs.isEmpty() ? QString() : r.refs.join(QStringLiteral(", ")) + QStringLiteral(" · ");
            text += r.commit.left(7);
            if (r.nSnapshots > 1) text += tr(" (+%1 more)").arg(r.nSnapshots - 1);
            return text;
        }
        case Size:
            return formatBytes(uint64_t(r.bytes)) + (r.incomplete ? tr(" (incomplete)") : QString());
        default:
            return {};
    }
}

QVariant HubCacheModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size()) return {};
    const CachedRepo& r = m_rows[index.row()];
    switch (role) {
        case Qt::DisplayRole:
            return display(r, index.column());
        case Qt::ToolTipRole:
            if (r.incomplete) return tr("An interrupted download left partial files: download it again to resume");
            return r.snapshot;
        case Qt::TextAlignmentRole:
            return index.column() == Size ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
        case SortRole:
            return index.column() == Size ? QVariant(r.bytes) : display(r, index.column());
        case IdRole:
            return r.id;
        case KindRole:
            return kindName(r.kind);
        case SnapshotRole:
            return r.snapshot;
        case CommitRole:
            return r.commit;
        case BaseModelRole:
            return r.baseModel;
        default:
            return {};
    }
}

void HubCacheModel::setRepos(QList<CachedRepo> repos) {
    beginResetModel();
    m_rows = std::move(repos);
    endResetModel();
}

const CachedRepo* HubCacheModel::repoAt(int row) const {
    return row >= 0 && row < m_rows.size() ? &m_rows[row] : nullptr;
}

int HubCacheModel::rowOf(const QString& id) const {
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].id == id) return i;
    return -1;
}

QStringList HubCacheModel::modelIds() const {
    QStringList ids;
    for (const CachedRepo& r : m_rows)
        if (r.kind == CachedRepo::Kind::model) ids << r.id;
    return ids;
}

}  // namespace loradesk::ui
