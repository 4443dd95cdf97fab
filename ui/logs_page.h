// LogsPage: the live engine log (LogModel fed by a core/log.h sink) with a level filter, a text filter,
// follow-the-tail, copy and clear.
#pragma once

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLineEdit;
class QListView;

namespace loradesk::ui {

class LogFilterModel;
class LogModel;

class LogsPage : public QWidget {
    Q_OBJECT
  public:
    explicit LogsPage(LogModel* model, QWidget* parent = nullptr);

    LogFilterModel* filter() const { return m_filter; }
    void setMinimumLevelIndex(int index);  // 0 trace … 4 error

  private:
    LogModel* m_model;
    LogFilterModel* m_filter;
    QComboBox* m_level;
    QLineEdit* m_text;
    QCheckBox* m_follow;
    QListView* m_view;
};

}  // namespace loradesk::ui
