// pull() on a worker thread, reported through queued calls on the GUI thread.
#include "ui/models/hub_download.h"

#include <QDir>
#include <QMetaObject>
#include <chrono>

#include "core/error.h"
#include "hub/download/pull.h"

namespace loradesk::ui {

namespace {

// Bytes per second from successive reports, smoothed so that the figure does not jump with each file.
class RateMeter {
  public:
    double update(int64_t bytes) {
        const auto now = Clock::now();
        if (!m_started) {
            m_started = true;
            m_last = now;
            m_bytes = bytes;
            return 0;
        }
        const double dt = std::chrono::duration<double>(now - m_last).count();
        if (dt >= 0.1) {
            const double rate = double(bytes - m_bytes) / dt;
            m_rate = m_rate <= 0 ? rate : 0.7 * m_rate + 0.3 * rate;
            m_last = now;
            m_bytes = bytes;
        }
        return std::max(0.0, m_rate);
    }

  private:
    using Clock = std::chrono::steady_clock;
    bool m_started = false;
    Clock::time_point m_last;
    int64_t m_bytes = 0;
    double m_rate = 0;
};

}  // namespace

HubDownload::HubDownload(QObject* parent) : QObject(parent) {
    qRegisterMetaType<DownloadProgress>();
    qRegisterMetaType<DownloadResult>();
}

HubDownload::~HubDownload() {
    m_cancel = true;
    join();  // queued reports still pending are dropped with this object
}

void HubDownload::join() {
    if (m_worker.joinable()) m_worker.join();
}

void HubDownload::cancel() {
    if (m_running) m_cancel = true;
}

bool HubDownload::start(const QString& id) {
    if (m_running) return false;
    const auto parsed = hub::parse_hub_id(id.trimmed().toStdString());
    if (!parsed) {
        const auto why = hub::hub_id_problem(id.trimmed().toStdString());
        emit failed(
            id,
            tr("'%1' is not a Hugging Face Hub id (org/name): %2").arg(id, QString::fromStdString(why.value_or(""))),
            false);
        return false;
    }
    join();  // the previous download's thread has reported its end already
    m_cancel = false;
    m_running = true;
    m_id = id.trimmed();
    m_worker = std::thread([this, hubId = *parsed, id = m_id] {
        RateMeter meter;
        hub::PullOptions options;
        options.cancel = &m_cancel;
        options.on_progress = [this, &meter](const hub::PullProgress& p) {
            DownloadProgress d{p.bytes_done, p.bytes_total, p.files_done, p.files_total, meter.update(p.bytes_done)};
            QMetaObject::invokeMethod(
                this, [this, d] { emit progress(d); }, Qt::QueuedConnection);
        };
        DownloadResult result;
        QString error;
        bool cancelled = false;
        try {
            const hub::PullResult r = hub::pull(hubId, options);
            result = {id,
                      QString::fromStdString(r.commit),
                      QString::fromStdString(r.snapshot),
                      r.files_downloaded,
                      r.files_cached,
                      QDir(QString::fromStdString(r.snapshot)).exists("adapter_config.json")};
        } catch (const Error& e) {
            cancelled = e.code() == ErrorCode::cancelled;
            error = QString::fromStdString(e.what());
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, result, error, cancelled] {
                m_running = false;
                if (error.isEmpty())
                    emit finished(result);
                else
                    emit failed(m_id, cancelled ? tr("cancelled") : error, cancelled);
            },
            Qt::QueuedConnection);
    });
    return true;
}

}  // namespace loradesk::ui
