// LogModel: the engine log as a bounded list (oldest lines drop first), fed by LogSink which forwards
// core/log.h messages from any thread to the GUI thread as queued calls. LogFilterModel hides lines
// below a chosen level and optionally filters by text. Models: GUI thread only.
#pragma once

#include <QAbstractListModel>
#include <QDateTime>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <deque>

#include "core/log.h"

namespace loradesk::ui {

struct LogLine {
    log::Level level = log::Level::info;
    QDateTime time;
    QString message;
};

class LogModel : public QAbstractListModel {
    Q_OBJECT
  public:
    enum Role { LevelRole = Qt::UserRole + 1, MessageRole, TimeRole };

    explicit LogModel(int capacity = 5000, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void append(log::Level level, const QString& message, const QDateTime& time = QDateTime::currentDateTime());
    void clear();
    int capacity() const { return m_capacity; }
    QString plainText() const;  // for "copy all"

  private:
    std::deque<LogLine> m_lines;
    int m_capacity;
};

// Registers a core/log.h sink for its lifetime and appends every message to `model` on the model's thread.
class LogSink : public QObject {
    Q_OBJECT
  public:
    explicit LogSink(LogModel* model);
    ~LogSink() override;

  private:
    int m_sinkId = -1;
};

class LogFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
  public:
    explicit LogFilterModel(QObject* parent = nullptr);
    void setMinimumLevel(log::Level level);
    void setText(const QString& text);
    log::Level minimumLevel() const { return m_minimum; }

  protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

  private:
    log::Level m_minimum = log::Level::trace;
    QString m_text;
};

}  // namespace loradesk::ui
