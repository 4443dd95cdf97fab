// The Discover tab.
#include "ui/discover_panel.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QThreadPool>
#include <QVBoxLayout>

#include "hub/hub_id.h"
#include "ui/models/async_call.h"
#include "ui/models/format.h"
#include "ui/models/hub_queries.h"
#include "ui/models/hub_search_model.h"

namespace loradesk::ui {

namespace {

// Hub requests wait on the network for seconds; they get threads of their own so that engine calls on the
// global pool never queue behind them.
QThreadPool* hubPool() {
    static QThreadPool* pool = [] {
        auto* p = new QThreadPool(QCoreApplication::instance());
        p->setMaxThreadCount(4);
        return p;
    }();
    return pool;
}

QString formatMb(qint64 bytes) { return formatBytes(uint64_t(std::max<qint64>(bytes, 0))); }

}  // namespace

DiscoverPanel::DiscoverPanel(QWidget* parent)
    : QWidget(parent), m_results(new HubSearchModel(this)), m_download(new HubDownload(this)) {
    auto* outer = new QVBoxLayout(this);
    auto* searchRow = new QHBoxLayout;
    m_query = new QLineEdit(this);
    m_query->setObjectName("hubSearchEdit");
    m_query->setPlaceholderText(tr("A Hub id (org/name) or words to search the Hugging Face Hub for"));
    m_query->setClearButtonEnabled(true);
    m_searchButton = new QPushButton(tr("Search"), this);
    m_searchButton->setObjectName("hubSearchButton");
    m_adaptersButton = new QPushButton(tr("Adapters for the served model"), this);
    m_adaptersButton->setObjectName("baseAdaptersButton");
    searchRow->addWidget(m_query, 1);
    searchRow->addWidget(m_searchButton);
    searchRow->addWidget(m_adaptersButton);
    outer->addLayout(searchRow);

    m_table = new QTableView(this);
    m_table->setObjectName("hubResults");
    m_table->setModel(m_results);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(HubSearchModel::Id, QHeaderView::Stretch);
    outer->addWidget(m_table, 1);

    auto* downloadRow = new QHBoxLayout;
    m_downloadButton = new QPushButton(tr("Download"), this);
    m_downloadButton->setObjectName("downloadButton");
    m_downloadButton->setToolTip(tr("Download into the Hugging Face cache, where transformers and vLLM find it too"));
    m_cancelButton = new QPushButton(tr("Cancel"), this);
    m_cancelButton->setObjectName("cancelDownloadButton");
    m_progress = new QProgressBar(this);
    m_progress->setObjectName("downloadProgress");
    m_progress->setRange(0, 100);
    m_progressText = new QLabel(this);
    m_progressText->setObjectName("downloadStatus");
    downloadRow->addWidget(m_downloadButton);
    downloadRow->addWidget(m_cancelButton);
    downloadRow->addWidget(m_progress, 1);
    downloadRow->addWidget(m_progressText, 1);
    m_serveButton = new QPushButton(tr("Serve it"), this);
    m_serveButton->setObjectName("serveDownloadButton");
    m_serveButton->setToolTip(tr("Load the downloaded adapter into the running engine, named after the repository"));
    m_serveButton->hide();
    downloadRow->addWidget(m_serveButton);
    outer->addLayout(downloadRow);
    m_message = new QLabel(this);
    m_message->setObjectName("discoverMessage");
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_message);

    connect(m_query, &QLineEdit::returnPressed, this, [this] { search(m_query->text()); });
    connect(m_searchButton, &QPushButton::clicked, this, [this] { search(m_query->text()); });
    connect(m_adaptersButton, &QPushButton::clicked, this, &DiscoverPanel::searchAdaptersOfBaseModel);
    connect(m_downloadButton, &QPushButton::clicked, this, &DiscoverPanel::downloadSelected);
    connect(m_cancelButton, &QPushButton::clicked, this, &DiscoverPanel::cancelDownload);
    connect(m_serveButton, &QPushButton::clicked, this, &DiscoverPanel::serveDownloaded);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &DiscoverPanel::updateButtons);
    connect(m_download, &HubDownload::progress, this, &DiscoverPanel::onProgress);
    connect(m_download, &HubDownload::finished, this, &DiscoverPanel::onFinished);
    connect(m_download, &HubDownload::failed, this, &DiscoverPanel::onFailed);
    setBaseModel({});
}

void DiscoverPanel::setBaseModel(const QString& id) {
    if (id == m_baseModel && !id.isEmpty()) return;
    m_baseModel = id;
    const bool hubId = hub::parse_hub_id(id.toStdString()).has_value();
    m_adaptersButton->setText(hubId ? tr("Adapters for %1").arg(id) : tr("Adapters for the served model"));
    m_adaptersButton->setToolTip(hubId ? tr("The Hub's adapters whose base model is %1").arg(id)
                                       : tr("The served model is not a Hub id, so the Hub cannot list its adapters"));
    updateButtons();
}

QString DiscoverPanel::selectedId() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? QString() : rows.first().data(HubSearchModel::IdRole).toString();
}

bool DiscoverPanel::selectListing(const QString& id) {
    const int row = m_results->rowOf(id);
    if (row < 0) return false;
    m_table->selectRow(row);
    return true;
}

QString DiscoverPanel::message() const { return m_message->text(); }
QString DiscoverPanel::progressText() const { return m_progressText->text(); }
int DiscoverPanel::progressPercent() const { return m_progress->value(); }

void DiscoverPanel::showMessage(const QString& text, bool error) {
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: #c0392b;") : QString());
}

void DiscoverPanel::updateButtons() {
    m_searchButton->setEnabled(!m_searching);
    m_adaptersButton->setEnabled(!m_searching && hub::parse_hub_id(m_baseModel.toStdString()).has_value());
    m_downloadButton->setEnabled(!m_download->running() && !selectedId().isEmpty());
    m_cancelButton->setEnabled(m_download->running());
    m_serveButton->setVisible(!m_downloadedAdapter.isEmpty());
    m_serveButton->setEnabled(m_canServe && !m_download->running());
}

void DiscoverPanel::setServingAvailable(bool on) {
    m_canServe = on;
    updateButtons();
}

// The adapter is served under its repository's name ("acme/bofh-lora" -> "bofh-lora"), as `loradeskd pull
// --adapter` names it; the engine checks the name and the adapter's fit with the base model.
void DiscoverPanel::serveDownloaded() {
    if (m_downloadedAdapter.isEmpty() || !m_canServe) return;
    emit serveRequested(m_downloadedAdapter.section(QLatin1Char('/'), 1), m_downloadedSnapshot);
}

void DiscoverPanel::search(const QString& text) {
    const QString query = text.trimmed();
    if (query.isEmpty() || m_searching) return;
    m_query->setText(query);
    m_searching = true;
    showMessage(tr("Searching the Hub for '%1'…").arg(query), false);
    updateButtons();
    runAsync<HubQueryResult>(
        this, [query] { return searchHub(query); },
        [this, query](HubQueryResult r) { showResults(r, tr("'%1'").arg(query)); }, hubPool());
}

void DiscoverPanel::searchAdaptersOfBaseModel() {
    if (m_searching || m_baseModel.isEmpty()) return;
    const QString base = m_baseModel;
    m_searching = true;
    showMessage(tr("Asking the Hub for adapters of %1…").arg(base), false);
    updateButtons();
    runAsync<HubQueryResult>(
        this, [base] { return searchAdapters(base); },
        [this, base](HubQueryResult r) { showResults(r, tr("adapters of %1").arg(base)); }, hubPool());
}

void DiscoverPanel::showResults(const HubQueryResult& r, const QString& what) {
    m_searching = false;
    ++m_generation;
    m_results->setListings(r.listings);
    if (!r.error.isEmpty())
        showMessage(r.error, true);
    else if (r.listings.isEmpty())
        showMessage(tr("The Hub lists nothing for %1").arg(what), false);
    else
        showMessage((r.listings.size() == 1 ? tr("1 repository") : tr("%1 repositories").arg(r.listings.size())) +
                        tr(" for %1, most downloaded first").arg(what),
                    false);
    if (!r.listings.isEmpty()) m_table->selectRow(0);
    updateButtons();
    fetchSizes();
    emit searchDone();
}

// The listing has no sizes: each repository's file list gives its download size, one request each.
void DiscoverPanel::fetchSizes() {
    const int generation = m_generation;
    for (int row = 0; row < m_results->rowCount(); ++row) {
        const HubListing* l = m_results->listingAt(row);
        if (l->bytes >= 0) continue;
        const QString id = l->id;
        runAsync<qint64>(
            this, [id] { return repoDownloadSize(id); },
            [this, id, generation](qint64 bytes) {
                if (generation == m_generation && bytes >= 0) m_results->setSize(id, bytes);
            },
            hubPool());
    }
}

void DiscoverPanel::downloadSelected() {
    const QString id = selectedId();
    if (id.isEmpty() || !m_download->start(id)) return;
    m_downloadedAdapter.clear();
    m_progress->setValue(0);
    m_progressText->setText(tr("Asking the Hub for the file list…"));
    showMessage(tr("Downloading %1 into the Hugging Face cache…").arg(id), false);
    updateButtons();
}

void DiscoverPanel::cancelDownload() {
    if (!m_download->running()) return;
    m_download->cancel();
    m_progressText->setText(tr("Cancelling…"));
}

void DiscoverPanel::onProgress(const DownloadProgress& p) {
    const int percent = p.bytesTotal > 0 ? int(std::min<qint64>(100, p.bytesDone * 100 / p.bytesTotal)) : 0;
    m_progress->setValue(percent);
    m_progressText->setText(tr("%1 of %2 · %3/s · %4 of %5 files")
                                .arg(formatMb(p.bytesDone), formatMb(p.bytesTotal), formatMb(qint64(p.bytesPerSecond)))
                                .arg(p.filesDone)
                                .arg(p.filesTotal));
}

void DiscoverPanel::onFinished(const DownloadResult& r) {
    m_progress->setValue(100);
    m_progressText->setText(tr("%1 files downloaded").arg(r.filesDownloaded) +
                            (r.filesCached ? tr(", %1 already cached").arg(r.filesCached) : QString()));
    showMessage(tr("%1 is in the Hugging Face cache (commit %2): %3").arg(r.id, r.commit.left(7), r.snapshot), false);
    if (r.adapter) {
        m_downloadedAdapter = r.id.section(QLatin1Char('@'), 0, 0);
        m_downloadedSnapshot = r.snapshot;
    }
    updateButtons();
    emit downloaded(r);
}

void DiscoverPanel::onFailed(const QString& id, const QString& message, bool cancelled) {
    m_progressText->setText(cancelled ? tr("cancelled") : tr("failed"));
    if (cancelled) {
        m_progress->setValue(0);
        showMessage(tr("The download of %1 was cancelled; downloading it again resumes where it stopped.").arg(id),
                    false);
    } else {
        showMessage(tr("The download of %1 failed: %2").arg(id, message), true);
    }
    updateButtons();
}

}  // namespace loradesk::ui
