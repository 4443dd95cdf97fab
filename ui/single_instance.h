// SingleInstance: one desktop app per user. The first launch holds a QLockFile and listens on a
// QLocalServer in the runtime directory; a second launch finds the lock taken, tells the first one to
// raise its window over the local socket, and exits. A crashed first launch leaves a stale lock that
// QLockFile detects by PID, and a stale socket that listen() clears.
#pragma once

#include <QLockFile>
#include <QObject>
#include <memory>

class QLocalServer;

namespace loradesk::ui {

class SingleInstance : public QObject {
    Q_OBJECT
  public:
    // `directory`: where the lock file and socket live ($XDG_RUNTIME_DIR by default).
    explicit SingleInstance(const QString& name, QString directory = {}, QObject* parent = nullptr);
    ~SingleInstance() override;

    // True when this process is the first instance (then raiseRequested() may fire later). False when
    // another instance runs; it has been asked to raise its window.
    bool claim();
    QString socketPath() const { return m_socketPath; }

  signals:
    void raiseRequested();

  private:
    bool notifyPrimary() const;

    QString m_socketPath;
    std::unique_ptr<QLockFile> m_lock;
    QLocalServer* m_server = nullptr;
};

}  // namespace loradesk::ui
