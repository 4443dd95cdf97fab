// The playground conversation.
#include "ui/models/chat_model.h"

namespace loradesk::ui {

ChatModel::ChatModel(QObject* parent) : QAbstractListModel(parent) {}

int ChatModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_turns.size()); }

QHash<int, QByteArray> ChatModel::roleNames() const {
    auto names = QAbstractListModel::roleNames();
    names.insert(RoleRole, "role");
    names.insert(ContentRole, "content");
    names.insert(SummaryRole, "summary");
    names.insert(StreamingRole, "streaming");
    names.insert(FailedRole, "failed");
    return names;
}

QVariant ChatModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Turn& t = m_turns[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole: {
            QString out =
                (t.role == QLatin1String("user") ? tr("You") : tr("Assistant")) + QStringLiteral(": ") + t.content;
            if (t.streaming) out += QStringLiteral(" ▍");
            if (!t.summary.isEmpty()) out += QStringLiteral("\n") + t.summary;
            return out;
        }
        case RoleRole:
            return t.role;
        case ContentRole:
            return t.content;
        case SummaryRole:
            return t.summary;
        case StreamingRole:
            return t.streaming;
        case FailedRole:
            return t.failed;
        default:
            return {};
    }
}

void ChatModel::addUser(const QString& text) {
    const int row = int(m_turns.size());
    beginInsertRows({}, row, row);
    m_turns.push_back({QStringLiteral("user"), text, {}, false, false});
    endInsertRows();
}

void ChatModel::beginAssistant() {
    const int row = int(m_turns.size());
    beginInsertRows({}, row, row);
    m_turns.push_back({QStringLiteral("assistant"), {}, {}, true, false});
    endInsertRows();
}

void ChatModel::appendAssistant(const QString& chunk) {
    if (!streaming()) return;
    m_turns.back().content += chunk;
    const QModelIndex idx = index(int(m_turns.size()) - 1);
    emit dataChanged(idx, idx, {Qt::DisplayRole, ContentRole});
}

void ChatModel::finishAssistant(const QString& summary) {
    if (!streaming()) return;
    m_turns.back().streaming = false;
    m_turns.back().summary = summary;
    const QModelIndex idx = index(int(m_turns.size()) - 1);
    emit dataChanged(idx, idx);
}

void ChatModel::failAssistant(const QString& message) {
    if (!streaming()) return;
    Turn& t = m_turns.back();
    t.streaming = false;
    t.failed = true;
    t.summary = tr("Failed: %1").arg(message);
    const QModelIndex idx = index(int(m_turns.size()) - 1);
    emit dataChanged(idx, idx);
}

void ChatModel::clear() {
    if (m_turns.empty()) return;
    beginResetModel();
    m_turns.clear();
    endResetModel();
}

bool ChatModel::streaming() const { return !m_turns.empty() && m_turns.back().streaming; }

QString ChatModel::lastAssistantText() const {
    for (auto it = m_turns.rbegin(); it != m_turns.rend(); ++it)
        if (it->role == QLatin1String("assistant")) return it->content;
    return {};
}

nlohmann::ordered_json ChatModel::messagesJson() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    if (!m_system.isEmpty()) out.push_back({{"role", "system"}, {"content", m_system.toStdString()}});
    for (size_t i = 0; i < m_turns.size(); ++i) {
        const Turn& t = m_turns[i];
        if (t.streaming || t.failed) continue;
        // A user turn whose answer failed is dropped with it, so roles keep alternating.
        if (t.role == QLatin1String("user") && i + 1 < m_turns.size() && m_turns[i + 1].failed) continue;
        out.push_back({{"role", t.role.toStdString()}, {"content", t.content.toStdString()}});
    }
    return out;
}

}  // namespace loradesk::ui
