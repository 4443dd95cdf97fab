#include "ui/engine_host.h"

#include <QMetaObject>
#include <QPointer>

namespace loradesk::ui {

EngineHost::EngineHost(QObject* parent) : QObject(parent) {}

EngineHost::~EngineHost() {
    if (m_loader.joinable()) m_loader.join();
    if (m_engine) m_engine->shutdown();
}

void EngineHost::start(const api::EngineOptions& options) {
    m_options = options;
    QPointer<EngineHost> self(this);
    m_loader = std::thread([this, self, options] {
        auto result = api::create_engine(options);  // never throws
        std::shared_ptr<api::Engine> made;
        QString error;
        if (result.ok()) {
            made = std::shared_ptr<api::Engine>(std::move(result).value().release());
        } else {
            error = QString::fromStdString(result.status().message);
        }
        // Hand the engine over on the GUI thread. QPointer drops the hand-over if the host is gone.
        QMetaObject::invokeMethod(
            this,
            [self, made, error]() mutable {
                if (!self) return;
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
