// SingleInstance: the first claim wins and a second one (in this process, like a second launch) is
// refused and makes the first raise its window; a released lock can be claimed again.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <thread>

#include "ui/single_instance.h"

using loradesk::ui::SingleInstance;

class TestSingleInstance : public QObject {
    Q_OBJECT
  private slots:
    void secondLaunchRaisesFirst();
    void releasedLockCanBeClaimed();
};

void TestSingleInstance::secondLaunchRaisesFirst() {
    QTemporaryDir dir;
    SingleInstance first("loradesk-test", dir.path());
    QSignalSpy raised(&first, &SingleInstance::raiseRequested);
    QVERIFY(first.claim());
    // The second launch blocks while it talks to the first; run it on a thread so that the first one's
    // event loop (this thread) can accept the connection.
    bool secondClaimed = true;
    std::thread second([&] {
        SingleInstance other("loradesk-test", dir.path());
        secondClaimed = other.claim();
    });
    QTRY_COMPARE(raised.count(), 1);
    second.join();
    QVERIFY(!secondClaimed);
}

void TestSingleInstance::releasedLockCanBeClaimed() {
    QTemporaryDir dir;
    {
        SingleInstance first("loradesk-test", dir.path());
        QVERIFY(first.claim());
    }
    SingleInstance again("loradesk-test", dir.path());
    QVERIFY(again.claim());
}

QTEST_GUILESS_MAIN(TestSingleInstance)
#include "tst_single_instance.moc"
