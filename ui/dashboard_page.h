// DashboardPage: the live state of the engine from EnginePoller snapshots — tokens/s (number and
// chart), running/waiting, memory split (weights / KV pages / adapter slots), adapter tier occupancy,
// KV use and the prefix-cache hit rate.
#pragma once

#include <QWidget>

#include "ui/models/engine_poller.h"

class QChart;
class QLabel;
class QLineSeries;
class QPieSeries;
class QProgressBar;
class QValueAxis;

namespace loradesk::ui {

class StatsHistoryModel;

class DashboardPage : public QWidget {
    Q_OBJECT
  public:
    explicit DashboardPage(QWidget* parent = nullptr);

    void showSnapshot(const EngineSnapshot& snapshot);
    void showMessage(const QString& text);  // loading / failure state
    StatsHistoryModel* history() const { return m_history; }
    QString valueText(const char* objectName) const;  // for tests

  private:
    QLabel* bigNumber(const QString& caption, const char* name, QWidget* parent);
    void updateTokenChart();

    StatsHistoryModel* m_history;
    QLabel* m_state;
    QLabel* m_model;
    QLabel* m_tokens;
    QLabel* m_running;
    QLabel* m_waiting;
    QLabel* m_hitRate;
    QProgressBar* m_kv;
    QProgressBar* m_gpuSlots;
    QLabel* m_tiers;
    QLabel* m_scheduler;
    QPieSeries* m_memory;
    QLineSeries* m_tokenSeries;
    QValueAxis* m_axisX;
    QValueAxis* m_axisY;
};

}  // namespace loradesk::ui
