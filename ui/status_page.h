// StatusPage: what the engine is serving — model, device, parameters, memory, server address.
// Refreshes from Engine::model()/stats() snapshots on a timer (cheap, lock-free on the UI side).
#pragma once

#include <QLabel>
#include <QTimer>
#include <QWidget>

#include "api/engine.h"

namespace loradesk::ui {

class StatusPage : public QWidget {
    Q_OBJECT
public:
    explicit StatusPage(QWidget* parent = nullptr);

    void showLoading(const QString& what);
    void showFailure(const QString& message);
    void showEngine(api::Engine* engine, const QString& serverAddress);

private:
    void refresh();

    api::Engine* m_engine = nullptr;
    QTimer m_timer;
    QLabel* m_state = nullptr;
    QLabel* m_model = nullptr;
    QLabel* m_architecture = nullptr;
    QLabel* m_device = nullptr;
    QLabel* m_parameters = nullptr;
    QLabel* m_context = nullptr;
    QLabel* m_memory = nullptr;
    QLabel* m_server = nullptr;
    QLabel* m_requests = nullptr;
    QLabel* m_adapters = nullptr;
};

QString formatCount(uint64_t n);   // 1.2 M, 8.0 B
QString formatBytes(uint64_t n);   // 512 MiB

}  // namespace loradesk::ui
