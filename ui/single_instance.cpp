// Lock file + local socket single-instance guard.
#include "ui/single_instance.h"

#include <QDir>
#include <QLocalServer>
#include <QLocalSocket>
#include <QStandardPaths>
#include <QThread>

namespace loradesk::ui {

namespace {
constexpr const char kRaise[] = "raise\n";
}

SingleInstance::SingleInstance(const QString& name, QString directory, QObject* parent) : QObject(parent) {
    if (directory.isEmpty()) directory = QStandardPaths::writableLocation(QStandardPaths::RuntimeLocation);
    if (directory.isEmpty()) directory = QDir::tempPath();
    QDir().mkpath(directory);
    m_socketPath = QDir(directory).filePath(name + QStringLiteral(".socket"));
    m_lock = std::make_unique<QLockFile>(QDir(directory).filePath(name + QStringLiteral(".lock")));
    m_lock->setStaleLockTime(0);  // only a dead owner makes the lock stale, never its age
}

SingleInstance::~SingleInstance() {
    if (m_server) m_server->close();
}

bool SingleInstance::claim() {
    if (!m_lock->tryLock(100)) {
        // A primary that is still starting may not listen yet: try a few times before giving up.
        for (int i = 0; i < 20 && !notifyPrimary(); ++i) QThread::msleep(50);
        return false;
    }
    m_server = new QLocalServer(this);
    m_server->setSocketOptions(QLocalServer::UserAccessOption);
    QLocalServer::removeServer(m_socketPath);
    if (!m_server->listen(m_socketPath)) return true;  // still the only instance; raising just won't work
    connect(m_server, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket* socket = m_server->nextPendingConnection()) {
            connect(socket, &QLocalSocket::disconnected, socket, &QObject::deleteLater);
            connect(socket, &QLocalSocket::readyRead, this, [this, socket] {
                if (socket->readAll().startsWith("raise")) emit raiseRequested();
            });
        }
    });
    return true;
}

bool SingleInstance::notifyPrimary() const {
    QLocalSocket socket;
    socket.connectToServer(m_socketPath);
    if (!socket.waitForConnected(200)) return false;
    socket.write(kRaise);
    const bool ok = socket.waitForBytesWritten(200);
    socket.disconnectFromServer();
    return ok;
}

}  // namespace loradesk::ui
