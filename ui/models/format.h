// Human-readable numbers for the views (counts, bytes, durations, timestamps). Pure functions, Qt Core
// only, so item models and widgets format the same way.
#pragma once

#include <QString>
#include <cstdint>

namespace loradesk::ui {

QString formatCount(uint64_t n);                       // 950, 1.2 k, 3.4 M, 8.00 B
QString formatBytes(uint64_t n);                       // 512 B, 1.5 MiB
QString formatAgo(int64_t unixTime, int64_t nowUnix);  // "never", "12 s ago", "3 min ago", a date
QString formatRate(double perSecond);                  // "12.3/s"

}  // namespace loradesk::ui
