// DiscoverPanel: the Models page's "Discover" tab — search the Hugging Face Hub by id or words, list the Hub's
// adapters of the served base model, and download a repository into the Hugging Face cache with progress
// (bytes, rate, files) and Cancel. Searches run on a pool of their own and the download on HubDownload's
// thread: the GUI thread never waits on the network. Errors show the Hub's reason as hub_api words it (gated,
// not found, offline), which says what to do.
#pragma once

#include <QWidget>

#include "ui/models/hub_download.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace loradesk::ui {

class HubSearchModel;
struct HubQueryResult;

class DiscoverPanel : public QWidget {
    Q_OBJECT
  public:
    explicit DiscoverPanel(QWidget* parent = nullptr);

    // The served model's id: its Hub adapters are one click away (nothing when it is no Hub id).
    void setBaseModel(const QString& id);
    // Whether an engine runs that "Serve it" can load a downloaded adapter into.
    void setServingAvailable(bool on);
    HubSearchModel* results() const { return m_results; }
    QTableView* table() const { return m_table; }
    HubDownload* downloader() const { return m_download; }
    bool searching() const { return m_searching; }
    bool selectListing(const QString& id);
    QString selectedId() const;
    QString message() const;
    QString progressText() const;
    int progressPercent() const;

  public slots:
    void search(const QString& text);
    void searchAdaptersOfBaseModel();
    void downloadSelected();
    void cancelDownload();
    void serveDownloaded();  // after an adapter's download: serveRequested(its repository's name, its snapshot)

  signals:
    void downloaded(const loradesk::ui::DownloadResult& result);
    void serveRequested(const QString& name, const QString& folder);
    void searchDone();  // results (or an error) are shown; sizes may still arrive

  private:
    void showResults(const HubQueryResult& result, const QString& what);
    void fetchSizes();
    void onProgress(const DownloadProgress& p);
    void onFinished(const DownloadResult& r);
    void onFailed(const QString& id, const QString& message, bool cancelled);
    void updateButtons();
    void showMessage(const QString& text, bool error);

    HubSearchModel* m_results;
    HubDownload* m_download;
    QLineEdit* m_query;
    QPushButton* m_searchButton;
    QPushButton* m_adaptersButton;
    QTableView* m_table;
    QPushButton* m_downloadButton;
    QPushButton* m_cancelButton;
    QProgressBar* m_progress;
    QLabel* m_progressText;
    QPushButton* m_serveButton;
    QLabel* m_message;
    QString m_baseModel;
    QString m_downloadedAdapter, m_downloadedSnapshot;  // the last download, when it was an adapter
    bool m_canServe = false;
    bool m_searching = false;
    int m_generation = 0;  // a newer search drops an older one's late sizes
};

}  // namespace loradesk::ui
