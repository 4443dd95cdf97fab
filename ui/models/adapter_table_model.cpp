// Table over adapter snapshots: display text, raw sort values, filter roles, merge-by-name updates.
#include "ui/models/adapter_table_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <algorithm>
#include <set>

#include "ui/models/format.h"

namespace loradesk::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool sameRow(const api::AdapterInfo& a, const api::AdapterInfo& b) {
    return a.aliases == b.aliases && a.digest == b.digest && a.path == b.path && a.base_model == b.base_model &&
           a.rank == b.rank && a.alpha == b.alpha && a.targets == b.targets && a.size_bytes == b.size_bytes &&
           a.tier == b.tier && a.pinned == b.pinned && a.compatible == b.compatible &&
           a.incompatibility == b.incompatibility && a.running == b.running && a.waiting == b.waiting &&
           a.requests_total == b.requests_total && a.generated_tokens_total == b.generated_tokens_total &&
           a.prompt_tokens_total == b.prompt_tokens_total && a.cached_tokens_total == b.cached_tokens_total &&
           a.last_used_unix == b.last_used_unix && a.rslora == b.rslora;
}

QString tierText(api::Tier tier) {
    const std::string_view name = api::tier_name(tier);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

int tierOrder(api::Tier tier) {
    if (tier == api::Tier::gpu) return 0;
    if (tier == api::Tier::cpu) return 1;
    return 2;
}

}  // namespace

AdapterTableModel::AdapterTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int AdapterTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

int AdapterTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AdapterTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Name:
            return tr("Name");
        case Rank:
            return tr("Rank");
        case Alpha:
            return tr("Alpha");
        case Targets:
            return tr("Targets");
        case Size:
            return tr("Size");
        case Tier:
            return tr("Tier");
        case Pinned:
            return tr("Pinned");
        case Requests:
            return tr("Requests");
        case Tokens:
            return tr("Tokens");
        case LastUsed:
            return tr("Last used");
        default:
            return {};
    }
}

QHash<int, QByteArray> AdapterTableModel::roleNames() const {
    auto names = QAbstractTableModel::roleNames();
    names.insert(SortRole, "sortValue");
    names.insert(NameRole, "name");
    names.insert(BaseModelRole, "baseModel");
    names.insert(TierRole, "tier");
    names.insert(PinnedRole, "pinned");
    names.insert(CompatibleRole, "compatible");
    return names;
}

QVariant AdapterTableModel::display(const api::AdapterInfo& a, int column) const {
    switch (column) {
        case Name:
            return a.aliases.empty() ? qs(a.name) : tr("%1 (%2)").arg(qs(a.name), qs(a.aliases.front()));
        case Rank:
            return a.rank;
        case Alpha:
            return QString::number(double(a.alpha), 'g', 4) + (a.rslora ? tr(" rs") : QString());
        case Targets: {
            QStringList t;
            for (const auto& s : a.targets) t << qs(s);
            return t.join(QStringLiteral(", "));
        }
        case Size:
            return formatBytes(a.size_bytes);
        case Tier:
            return tierText(a.tier).toUpper();
        case Pinned:
            return a.pinned ? tr("pinned") : QString();
        case Requests:
            return formatCount(a.requests_total);
        case Tokens:
            return formatCount(a.generated_tokens_total);
        case LastUsed:
            return formatAgo(a.last_used_unix, m_nowUnix ? m_nowUnix : QDateTime::currentSecsSinceEpoch());
        default:
            return {};
    }
}

QVariant AdapterTableModel::sortValue(const api::AdapterInfo& a, int column) const {
    switch (column) {
        case Name:
            return qs(a.name).toLower();
        case Rank:
            return a.rank;
        case Alpha:
            return double(a.alpha);
        case Targets:
            return int(a.targets.size());
        case Size:
            return qulonglong(a.size_bytes);
        case Tier:
            return tierOrder(a.tier);
        case Pinned:
            return a.pinned ? 1 : 0;
        case Requests:
            return qulonglong(a.requests_total);
        case Tokens:
            return qulonglong(a.generated_tokens_total);
        case LastUsed:
            return qlonglong(a.last_used_unix);
        default:
            return {};
    }
}

QVariant AdapterTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const api::AdapterInfo& a = m_rows[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
            return display(a, index.column());
        case SortRole:
            return sortValue(a, index.column());
        case NameRole:
            return qs(a.name);
        case BaseModelRole:
            return qs(a.base_model);
        case TierRole:
            return tierText(a.tier);
        case PinnedRole:
            return a.pinned;
        case CompatibleRole:
            return a.compatible;
        case Qt::ToolTipRole:
            if (!a.compatible) return tr("Does not fit the base model: %1").arg(qs(a.incompatibility));
            if (index.column() == Tokens)
                return tr("%1 prompt (%2 from cache) · %3 generated")
                    .arg(a.prompt_tokens_total)
                    .arg(a.cached_tokens_total)
                    .arg(a.generated_tokens_total);
            return qs(a.path);
        case Qt::ForegroundRole:
            if (!a.compatible) return QBrush(QColor(0xb0, 0x30, 0x30));
            return {};
        case Qt::TextAlignmentRole:
            if (index.column() == Name || index.column() == Targets) return {};
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        default:
            return {};
    }
}

void AdapterTableModel::setAdapters(std::vector<api::AdapterInfo> adapters) {
    std::set<std::string> incoming;
    for (const auto& a : adapters) incoming.insert(a.name);
    // Remove vanished rows from the back so earlier indices stay valid.
    for (int row = int(m_rows.size()) - 1; row >= 0; --row) {
        if (incoming.count(m_rows[size_t(row)].name)) continue;
        beginRemoveRows({}, row, row);
        m_rows.erase(m_rows.begin() + row);
        endRemoveRows();
    }
    std::vector<api::AdapterInfo> added;
    for (auto& a : adapters) {
        const int row = rowOf(qs(a.name));
        if (row < 0) {
            added.push_back(std::move(a));
            continue;
        }
        if (sameRow(m_rows[size_t(row)], a)) continue;
        m_rows[size_t(row)] = std::move(a);
        emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
    }
    if (added.empty()) return;
    const int first = int(m_rows.size());
    beginInsertRows({}, first, first + int(added.size()) - 1);
    for (auto& a : added) m_rows.push_back(std::move(a));
    endInsertRows();
}

const api::AdapterInfo* AdapterTableModel::adapterAt(int row) const {
    if (row < 0 || row >= int(m_rows.size())) return nullptr;
    return &m_rows[size_t(row)];
}

int AdapterTableModel::rowOf(const QString& name) const {
    const std::string key = name.toStdString();
    for (size_t i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].name == key) return int(i);
    return -1;
}

QStringList AdapterTableModel::baseModels() const {
    QStringList out;
    for (const auto& a : m_rows)
        if (!a.base_model.empty() && !out.contains(qs(a.base_model))) out << qs(a.base_model);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace loradesk::ui
