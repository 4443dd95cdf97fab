// EngineHost: owns the engine for the Qt application. Creating the engine (loading weights) runs on a
// worker thread; the result comes back to the GUI thread as a queued signal, so the window stays
// responsive and shows progress. After ready(), engine() is valid until the host is destroyed.
#pragma once

#include <QObject>
#include <QString>

#include <memory>
#include <thread>

#include "api/engine.h"

namespace loradesk::ui {

class EngineHost : public QObject {
    Q_OBJECT
public:
    explicit EngineHost(QObject* parent = nullptr);
    ~EngineHost() override;

    // Starts creating the engine in the background; emits ready() or failed(). Call once.
    void start(const api::EngineOptions& options);
    api::Engine* engine() const { return m_engine.get(); }
    const api::EngineOptions& options() const { return m_options; }

signals:
    void ready();
    void failed(const QString& message);

private:
    api::EngineOptions m_options;
    std::shared_ptr<api::Engine> m_engine;  // shared so the queued hand-over can copy it
    std::thread m_loader;
};

}  // namespace loradesk::ui
