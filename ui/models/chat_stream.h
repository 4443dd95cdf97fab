// ChatStream: one generation request streamed off the GUI thread. submit() and RequestStream::next()
// run on the stream's own thread; submitted(), text(), finished() and failed() arrive on the GUI thread
// as queued calls. cancel() (or destruction) cancels the request and joins the thread.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "api/engine.h"

namespace loradesk::ui {

struct ChatResult {
    QString finishReason;  // stop | length | cancelled
    int promptTokens = 0;
    int cachedTokens = 0;
    int completionTokens = 0;
    double ttftMs = 0;
    double latencyMs = 0;
};

class ChatStream : public QObject {
    Q_OBJECT
  public:
    explicit ChatStream(QObject* parent = nullptr);
    ~ChatStream() override;

    // Starts `request` on `engine`; one request per ChatStream at a time (returns false if busy).
    bool start(std::shared_ptr<api::Engine> engine, api::GenerateRequest request);
    void cancel();
    bool busy() const { return m_busy; }

  signals:
    void submitted(const QString& adapter, const QString& tier, int promptTokens);
    void text(const QString& chunk);
    void finished(const loradesk::ui::ChatResult& result);
    void failed(const QString& message);

  private:
    void run(std::shared_ptr<api::Engine> engine, api::GenerateRequest request);
    void post(std::function<void()> fn);
    void join();

    std::thread m_thread;
    std::atomic<bool> m_cancel{false};
    bool m_busy = false;
};

}  // namespace loradesk::ui

Q_DECLARE_METATYPE(loradesk::ui::ChatResult)
