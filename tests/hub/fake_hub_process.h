// tests/hub/fake_hub.py as a child process for a test: started with its options (repositories, gated ones,
// --throttle, ...), its port read from the "PORT n" line, killed with the object. PYTHON3 is the interpreter
// CMake found; the test's target defines it. Optionally every request is logged (--log) for the test to read.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace loradesk::testing {

struct FakeHub {
    QProcess process;
    int port = 0;
    QString log;

    bool start(const QStringList& args, const QString& log_file = {}) {
        log = log_file;
        QStringList a{LORADESK_SOURCE_DIR "/tests/hub/fake_hub.py"};
        a += args;
        if (!log.isEmpty()) a += {"--log", log};
        process.start(PYTHON3, a);
        if (!process.waitForReadyRead(15000)) return false;
        const QByteArray line = process.readLine().trimmed();
        port = line.startsWith("PORT ") ? line.mid(5).toInt() : 0;
        return port > 0;
    }
    QString endpoint() const { return QString("http://127.0.0.1:%1").arg(port); }
    QList<QJsonObject> requests() const {
        QList<QJsonObject> out;
        QFile f(log);
        if (!f.open(QIODevice::ReadOnly)) return out;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (!line.isEmpty()) out.push_back(QJsonDocument::fromJson(line).object());
        return out;
    }
    ~FakeHub() {
        process.kill();
        process.waitForFinished(5000);
    }
};

}  // namespace loradesk::testing
