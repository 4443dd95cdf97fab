// HubDownload: one Hub download at a time for the desktop app — hub::pull() on its own thread, its progress
// and its end handed to the GUI thread as queued signals. cancel() sets pull()'s atomic flag; pull() then
// stops, leaves only .incomplete files (never one that looks complete) and the download ends in failed(...,
// cancelled = true). Lives on the GUI thread; its destructor cancels a running download and waits for it.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <thread>

namespace loradesk::ui {

struct DownloadProgress {
    qint64 bytesDone = 0;   // on disk, files already cached included
    qint64 bytesTotal = 0;  // of the whole revision, as the Hub listed it
    int filesDone = 0, filesTotal = 0;
    double bytesPerSecond = 0;  // smoothed over the last reports
};

struct DownloadResult {
    QString id, commit, snapshot;  // snapshot: <cache>/models--org--name/snapshots/<commit>
    int filesDownloaded = 0, filesCached = 0;
    bool adapter = false;  // the snapshot has adapter_config.json
};

class HubDownload : public QObject {
    Q_OBJECT
  public:
    explicit HubDownload(QObject* parent = nullptr);
    ~HubDownload() override;

    // Starts downloading `id` (`org/name[@revision]`) into the Hugging Face cache; false (and nothing
    // started) while another download runs or when `id` is not a Hub id (failed() says why).
    bool start(const QString& id);
    void cancel();
    bool running() const { return m_running; }
    QString currentId() const { return m_id; }

  signals:
    void progress(const loradesk::ui::DownloadProgress& progress);
    void finished(const loradesk::ui::DownloadResult& result);
    void failed(const QString& id, const QString& message, bool cancelled);

  private:
    void join();

    std::thread m_worker;
    std::atomic<bool> m_cancel{false};
    bool m_running = false;  // GUI thread: from start() to finished()/failed()
    QString m_id;
};

}  // namespace loradesk::ui

Q_DECLARE_METATYPE(loradesk::ui::DownloadProgress)
Q_DECLARE_METATYPE(loradesk::ui::DownloadResult)
