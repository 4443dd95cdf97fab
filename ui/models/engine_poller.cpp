// Off-thread snapshots of the engine for the views.
#include "ui/models/engine_poller.h"

#include "ui/models/async_call.h"

namespace loradesk::ui {

EnginePoller::EnginePoller(QObject* parent) : QObject(parent) {
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &EnginePoller::refreshNow);
}

void EnginePoller::setEngine(std::shared_ptr<api::Engine> engine) {
    m_engine = std::move(engine);
    if (!m_engine) {
        m_timer.stop();
        return;
    }
    m_clock.start();
    m_timer.start();
    refreshNow();
}

void EnginePoller::refreshNow() {
    if (!m_engine) return;
    if (m_inFlight) {
        m_again = true;
        return;
    }
    m_inFlight = true;
    auto engine = m_engine;
    const double at = double(m_clock.elapsed()) / 1000.0;
    runAsync<EngineSnapshot>(
        this,
        [engine, at] {
            EngineSnapshot s;
            s.model = engine->model();
            s.stats = engine->stats();
            s.adapters = engine->adapters();
            s.secondsSinceStart = at;
            return s;
        },
        [this](EngineSnapshot s) {
            m_inFlight = false;
            m_last = std::move(s);
            m_hasSnapshot = true;
            emit updated();
            if (m_again) {
                m_again = false;
                refreshNow();
            }
        });
}

}  // namespace loradesk::ui
