// EnginePoller: periodic snapshots of the engine (model, stats, adapters) taken on a pool thread and
// delivered to the GUI thread as updated(). At most one poll is in flight; a slow engine makes polls
// skip, never queue up. The dashboard, the adapter table and the status bar all read these snapshots.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <memory>
#include <vector>

#include "api/engine.h"

namespace loradesk::ui {

struct EngineSnapshot {
    api::ModelInfo model;
    api::EngineStats stats;
    std::vector<api::AdapterInfo> adapters;
    double secondsSinceStart = 0;  // when it was taken, relative to the poller's start
};

class EnginePoller : public QObject {
    Q_OBJECT
  public:
    explicit EnginePoller(QObject* parent = nullptr);

    // Starts polling `engine` (nullptr stops). The poller keeps the engine alive while a poll runs.
    void setEngine(std::shared_ptr<api::Engine> engine);
    void setInterval(int ms) { m_timer.setInterval(ms); }
    void refreshNow();  // an extra poll now (after an action changed state)
    const EngineSnapshot& last() const { return m_last; }
    bool hasSnapshot() const { return m_hasSnapshot; }

  signals:
    void updated();

  private:
    std::shared_ptr<api::Engine> m_engine;
    QTimer m_timer;
    QElapsedTimer m_clock;
    EngineSnapshot m_last;
    bool m_hasSnapshot = false;
    bool m_inFlight = false;
    bool m_again = false;  // refreshNow() during a poll: poll once more when it lands
};

}  // namespace loradesk::ui
