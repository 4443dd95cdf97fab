// Number formatting shared by the item models and the widgets.
#include "ui/models/format.h"

#include <QDateTime>

namespace loradesk::ui {

QString formatCount(uint64_t n) {
    if (n >= 1000000000ull) return QString::number(double(n) / 1e9, 'f', 2) + QStringLiteral(" B");
    if (n >= 1000000ull) return QString::number(double(n) / 1e6, 'f', 1) + QStringLiteral(" M");
    if (n >= 1000ull) return QString::number(double(n) / 1e3, 'f', 1) + QStringLiteral(" k");
    return QString::number(n);
}

QString formatBytes(uint64_t n) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(n);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    return QString::number(v, 'f', u == 0 ? 0 : 1) + QLatin1Char(' ') + QLatin1String(kUnits[u]);
}

QString formatAgo(int64_t unixTime, int64_t nowUnix) {
    if (unixTime <= 0) return QStringLiteral("never");
    const int64_t d = nowUnix - unixTime;
    if (d < 0) return QDateTime::fromSecsSinceEpoch(unixTime).toString(QStringLiteral("yyyy-MM-dd hh:mm"));
    if (d < 60) return QStringLiteral("%1 s ago").arg(d);
    if (d < 3600) return QStringLiteral("%1 min ago").arg(d / 60);
    if (d < 86400) return QStringLiteral("%1 h ago").arg(d / 3600);
    return QDateTime::fromSecsSinceEpoch(unixTime).toString(QStringLiteral("yyyy-MM-dd hh:mm"));
}

QString formatRate(double perSecond) { return QString::number(perSecond, 'f', perSecond < 10 ? 1 : 0) + "/s"; }

}  // namespace loradesk::ui
