// runAsync: runs `work` on a pool thread and hands its result to `done` on the GUI thread, unless
// `receiver` is gone by then. The result travels through the application object (alive for the whole
// run) and is checked against a QPointer on the GUI thread, so no thread touches a dead receiver.
// This is how every view calls the engine: the GUI thread never waits on it. `pool` lets slow network calls
// (the Hub) run on a pool of their own, so that they never queue the engine calls behind them.
#pragma once

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>
#include <functional>
#include <utility>

namespace loradesk::ui {

template <class T>
void runAsync(QObject* receiver, std::function<T()> work, std::function<void(T)> done,
              QThreadPool* pool = QThreadPool::globalInstance()) {
    QPointer<QObject> guard(receiver);
    pool->start([guard, work = std::move(work), done = std::move(done)]() mutable {
        T result = work();
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, done = std::move(done), result = std::move(result)]() mutable {
                if (guard) done(std::move(result));
            },
            Qt::QueuedConnection);
    });
}

}  // namespace loradesk::ui
