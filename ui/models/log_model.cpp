// Bounded log list, the thread-crossing sink and the level/text filter.
#include "ui/models/log_model.h"

#include <QBrush>
#include <QColor>
#include <QMetaObject>

namespace loradesk::ui {

LogModel::LogModel(int capacity, QObject* parent) : QAbstractListModel(parent), m_capacity(std::max(1, capacity)) {}

int LogModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_lines.size()); }

QHash<int, QByteArray> LogModel::roleNames() const {
    auto names = QAbstractListModel::roleNames();
    names.insert(LevelRole, "level");
    names.insert(MessageRole, "message");
    names.insert(TimeRole, "time");
    return names;
}

QVariant LogModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const LogLine& line = m_lines[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
            return QStringLiteral("%1 [%2] %3")
                .arg(line.time.toString(QStringLiteral("hh:mm:ss.zzz")),
                     QString::fromUtf8(log::level_name(line.level).data(),
                                       qsizetype(log::level_name(line.level).size())),
                     line.message);
        case LevelRole:
            return int(line.level);
        case MessageRole:
            return line.message;
        case TimeRole:
            return line.time;
        case Qt::ForegroundRole:
            if (line.level >= log::Level::error) return QBrush(QColor(0xc0, 0x20, 0x20));
            if (line.level == log::Level::warn) return QBrush(QColor(0xa0, 0x60, 0x00));
            if (line.level <= log::Level::debug) return QBrush(QColor(0x80, 0x80, 0x80));
            return {};
        default:
            return {};
    }
}

void LogModel::append(log::Level level, const QString& message, const QDateTime& time) {
    // Drop the oldest lines first so the view never grows without bound in a long-running session.
    const int overflow = int(m_lines.size()) + 1 - m_capacity;
    if (overflow > 0) {
        beginRemoveRows({}, 0, overflow - 1);
        m_lines.erase(m_lines.begin(), m_lines.begin() + overflow);
        endRemoveRows();
    }
    const int row = int(m_lines.size());
    beginInsertRows({}, row, row);
    m_lines.push_back({level, time, message});
    endInsertRows();
}

void LogModel::clear() {
    if (m_lines.empty()) return;
    beginResetModel();
    m_lines.clear();
    endResetModel();
}

QString LogModel::plainText() const {
    QStringList out;
    for (int i = 0; i < rowCount(); ++i) out << data(index(i), Qt::DisplayRole).toString();
    return out.join(QLatin1Char('\n'));
}

LogSink::LogSink(LogModel* model) : QObject(model) {
    // Called on whichever thread logs, under the log mutex. The queued call targets this object, so it
    // is dropped if the sink dies first; ~LogSink removes the sink under the same mutex before that.
    m_sinkId = log::add_sink([this, model](log::Level level, std::string_view message) {
        const QString text = QString::fromUtf8(message.data(), qsizetype(message.size()));
        const QDateTime now = QDateTime::currentDateTime();
        QMetaObject::invokeMethod(
            this, [model, level, text, now] { model->append(level, text, now); }, Qt::QueuedConnection);
    });
}

LogSink::~LogSink() { log::remove_sink(m_sinkId); }

LogFilterModel::LogFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {}

void LogFilterModel::setMinimumLevel(log::Level level) {
    if (level == m_minimum) return;
    m_minimum = level;
    invalidateFilter();
}

void LogFilterModel::setText(const QString& text) {
    if (text == m_text) return;
    m_text = text;
    invalidateFilter();
}

bool LogFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex idx = sourceModel()->index(sourceRow, 0, sourceParent);
    if (idx.data(LogModel::LevelRole).toInt() < int(m_minimum)) return false;
    return m_text.isEmpty() || idx.data(LogModel::MessageRole).toString().contains(m_text, Qt::CaseInsensitive);
}

}  // namespace loradesk::ui
