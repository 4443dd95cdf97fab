// The streaming loop behind the playground.
#include "ui/models/chat_stream.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>

namespace loradesk::ui {

namespace {

QString finishName(api::FinishReason r) {
    switch (r) {
        case api::FinishReason::stop:
            return QStringLiteral("stop");
        case api::FinishReason::length:
            return QStringLiteral("length");
        case api::FinishReason::cancelled:
            return QStringLiteral("cancelled");
    }
    return QStringLiteral("stop");
}

}  // namespace

ChatStream::ChatStream(QObject* parent) : QObject(parent) {}

ChatStream::~ChatStream() {
    m_cancel = true;
    join();
}

void ChatStream::join() {
    if (m_thread.joinable()) m_thread.join();
}

bool ChatStream::start(std::shared_ptr<api::Engine> engine, api::GenerateRequest request) {
    if (m_busy || !engine) return false;
    join();  // the previous run has posted its last event; its thread is ending
    m_busy = true;
    m_cancel = false;
    m_thread = std::thread([this, engine = std::move(engine), request = std::move(request)]() mutable {
        run(std::move(engine), std::move(request));
    });
    return true;
}

void ChatStream::cancel() { m_cancel = true; }

void ChatStream::post(std::function<void()> fn) {
    // The destructor joins this thread, so `this` is alive here; the QPointer is checked on the GUI
    // thread because the object may be gone by the time the queued call runs.
    QPointer<ChatStream> self(this);
    QMetaObject::invokeMethod(
        QCoreApplication::instance(),
        [self, fn = std::move(fn)] {
            if (self) fn();
        },
        Qt::QueuedConnection);
}

void ChatStream::run(std::shared_ptr<api::Engine> engine, api::GenerateRequest request) {
    auto accepted = engine->submit(std::move(request));
    if (!accepted.ok()) {
        const QString message = QString::fromStdString(accepted.status().message);
        post([this, message] {
            m_busy = false;
            emit failed(message);
        });
        return;
    }
    std::shared_ptr<api::RequestStream> stream = accepted.value();
    const api::SubmitInfo info = stream->info();
    post([this, info] {
        emit submitted(QString::fromStdString(info.adapter), QString::fromUtf8(api::tier_name(info.tier).data()),
                       info.prompt_tokens);
    });
    bool cancelSent = false;
    int quietAfterCancel = 0;
    for (;;) {
        if (m_cancel && !cancelSent) {
            stream->cancel();  // a FinishEvent(cancelled) follows
            cancelSent = true;
        }
        std::optional<api::Event> event = stream->next(std::chrono::milliseconds(50));
        if (!event) {
            // An engine that was shut down under us may never answer; do not hold the window hostage.
            if (cancelSent && ++quietAfterCancel > 100) {
                post([this] {
                    m_busy = false;
                    emit finished(ChatResult{QStringLiteral("cancelled")});
                });
                return;
            }
            continue;
        }
        if (auto* t = std::get_if<api::TokenEvent>(&*event)) {
            if (t->text.empty()) continue;
            const QString chunk = QString::fromStdString(t->text);
            post([this, chunk] { emit text(chunk); });
        } else if (auto* f = std::get_if<api::FinishEvent>(&*event)) {
            ChatResult r{finishName(f->reason),
                         f->usage.prompt_tokens,
                         f->usage.cached_tokens,
                         f->usage.completion_tokens,
                         f->ttft_ms,
                         f->latency_ms};
            post([this, r] {
                m_busy = false;
                emit finished(r);
            });
            return;
        } else if (auto* e = std::get_if<api::ErrorEvent>(&*event)) {
            const QString message = QString::fromStdString(e->status.message);
            post([this, message] {
                m_busy = false;
                emit failed(message);
            });
            return;
        }
    }
}

}  // namespace loradesk::ui
