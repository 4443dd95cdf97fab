// EngineHost: owns the engine for the Qt application. Creating the engine (loading weights) runs on a
// worker thread; the result comes back to the GUI thread as a queued signal, so the window stays
// responsive and shows progress. The factory is injected (the app passes api::create_engine), so the
// widgets library does not depend on the engine implementation.
#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <thread>

#include "api/engine.h"

namespace loradesk::ui {

using EngineFactory = std::function<Result<std::unique_ptr<api::Engine>>(const api::EngineOptions&)>;

class EngineHost : public QObject {
    Q_OBJECT
  public:
    explicit EngineHost(EngineFactory factory, QObject* parent = nullptr);
    ~EngineHost() override;  // waits for a running start, then shuts the engine down

    // Starts creating the engine in the background; emits ready() or failed(). Call once.
    void start(const api::EngineOptions& options);
    // Valid after ready(). Shared so that background calls keep it alive while they run.
    std::shared_ptr<api::Engine> engine() const { return m_engine; }
    const api::EngineOptions& options() const { return m_options; }
    bool starting() const { return m_loader.joinable() && !m_engine; }

  signals:
    void ready();
    void failed(const QString& message);

  private:
    EngineFactory m_factory;
    api::EngineOptions m_options;
    std::shared_ptr<api::Engine> m_engine;
    std::thread m_loader;
};

}  // namespace loradesk::ui
