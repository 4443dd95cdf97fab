// Background engine start-up and ownership.
#include "ui/engine_host.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>

namespace loradesk::ui {

EngineHost::EngineHost(EngineFactory factory, QObject* parent) : QObject(parent), m_factory(std::move(factory)) {}

EngineHost::~EngineHost() {
    if (m_loader.joinable()) m_loader.join();
    if (m_engine) m_engine->shutdown();
}

void EngineHost::start(const api::EngineOptions& options) {
    m_options = options;
    QPointer<EngineHost> self(this);
    m_loader = std::thread([self, factory = m_factory, options] {
        Result<std::unique_ptr<api::Engine>> result =
            factory ? factory(options)
                    : Result<std::unique_ptr<api::Engine>>(Status::failure(ErrorCode::internal, "no engine factory"));
        std::shared_ptr<api::Engine> made;
        QString error;
        if (result.ok()) {
            made = std::shared_ptr<api::Engine>(std::move(result).value().release());
        } else {
            error = QString::fromStdString(result.status().message);
        }
        // Hand over on the GUI thread; the destructor joins this thread, and the QPointer drops the
        // hand-over if the host is gone by the time the queued call runs.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, made, error]() mutable {
                if (!self) {
                    if (made) made->shutdown();
                    return;
                }
                if (made) {
                    self->m_engine = std::move(made);
                    emit self->ready();
                } else {
                    emit self->failed(error);
                }
            },
            Qt::QueuedConnection);
    });
}

}  // namespace loradesk::ui
