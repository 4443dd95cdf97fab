// The Adapters view.
#include "ui/adapters_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/models/adapter_filter_model.h"
#include "ui/models/adapter_table_model.h"
#include "ui/models/async_call.h"

namespace loradesk::ui {

namespace {

QPushButton* button(QWidget* parent, const QString& text, const char* name) {
    auto* b = new QPushButton(text, parent);
    b->setObjectName(QLatin1String(name));
    return b;
}

}  // namespace

AdaptersPage::AdaptersPage(QWidget* parent)
    : QWidget(parent), m_model(new AdapterTableModel(this)), m_filter(new AdapterFilterModel(this)) {
    m_filter->setSourceModel(m_model);
    auto* outer = new QVBoxLayout(this);

    auto* filters = new QHBoxLayout;
    m_nameFilter = new QLineEdit(this);
    m_nameFilter->setObjectName("nameFilter");
    m_nameFilter->setPlaceholderText(tr("Filter by name or alias"));
    m_nameFilter->setClearButtonEnabled(true);
    m_baseFilter = new QComboBox(this);
    m_baseFilter->setObjectName("baseFilter");
    m_baseFilter->addItem(tr("Any base model"), QString());
    m_tierFilter = new QComboBox(this);
    m_tierFilter->setObjectName("tierFilter");
    m_tierFilter->addItem(tr("Any tier"), QString());
    m_tierFilter->addItem(tr("GPU"), QStringLiteral("gpu"));
    m_tierFilter->addItem(tr("CPU"), QStringLiteral("cpu"));
    m_tierFilter->addItem(tr("Disk"), QStringLiteral("disk"));
    m_pinnedOnly = new QCheckBox(tr("Pinned only"), this);
    m_pinnedOnly->setObjectName("pinnedOnly");
    filters->addWidget(m_nameFilter, 2);
    filters->addWidget(m_baseFilter, 1);
    filters->addWidget(m_tierFilter);
    filters->addWidget(m_pinnedOnly);
    outer->addLayout(filters);

    m_table = new QTableView(this);
    m_table->setObjectName("adapterTable");
    m_table->setModel(m_filter);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(AdapterTableModel::Name, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(AdapterTableModel::Targets, QHeaderView::Stretch);
    outer->addWidget(m_table, 1);

    auto* actions = new QHBoxLayout;
    m_import = button(this, tr("Import folder…"), "importButton");
    m_load = button(this, tr("Load"), "loadButton");
    m_unload = button(this, tr("Unload"), "unloadButton");
    m_load->setToolTip(tr("Try again to serve a folder that was refused, after fixing it"));
    m_unload->setToolTip(tr("Stop serving this adapter; running requests finish first"));
    m_pin = button(this, tr("Pin"), "pinButton");
    m_unpin = button(this, tr("Unpin"), "unpinButton");
    m_alias = button(this, tr("Alias…"), "aliasButton");
    m_remove = button(this, tr("Remove from catalog"), "removeButton");
    m_details = button(this, tr("Details"), "detailsButton");
    for (QPushButton* b : {m_import, m_load, m_unload, m_pin, m_unpin, m_alias, m_remove, m_details})
        actions->addWidget(b);
    actions->addStretch(1);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName("busyBar");
    m_progress->setRange(0, 0);  // indeterminate: the facade reports no fractions
    m_progress->setMaximumWidth(120);
    m_progress->hide();
    actions->addWidget(m_progress);
    outer->addLayout(actions);
    m_message = new QLabel(this);
    m_message->setObjectName("adapterMessage");
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_message);

    pickFolder = [this] { return QFileDialog::getExistingDirectory(this, tr("Import adapters from a folder")); };
    askAlias = [this](const QString& name) {
        return QInputDialog::getText(this, tr("Alias"), tr("Another name for '%1':").arg(name));
    };
    confirm = [this](const QString& question) {
        return QMessageBox::question(this, tr("Remove adapter"), question) == QMessageBox::Yes;
    };

    connect(m_nameFilter, &QLineEdit::textChanged, m_filter, &AdapterFilterModel::setNameFilter);
    connect(m_baseFilter, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setBaseModelFilter(m_baseFilter->currentData().toString()); });
    connect(m_tierFilter, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setTierFilter(m_tierFilter->currentData().toString()); });
    connect(m_pinnedOnly, &QCheckBox::toggled, m_filter, &AdapterFilterModel::setPinnedOnly);
    connect(m_import, &QPushButton::clicked, this, [this] {
        const QString folder = pickFolder ? pickFolder() : QString();
        if (!folder.isEmpty()) importFolder(folder);
    });
    connect(m_load, &QPushButton::clicked, this, &AdaptersPage::loadSelected);
    connect(m_unload, &QPushButton::clicked, this, &AdaptersPage::unloadSelected);
    connect(m_pin, &QPushButton::clicked, this, [this] { pinSelected(true); });
    connect(m_unpin, &QPushButton::clicked, this, [this] { pinSelected(false); });
    connect(m_alias, &QPushButton::clicked, this, &AdaptersPage::aliasSelected);
    connect(m_remove, &QPushButton::clicked, this, &AdaptersPage::removeSelected);
    connect(m_details, &QPushButton::clicked, this, [this] {
        if (!selectedName().isEmpty()) emit detailsRequested(selectedName());
    });
    connect(m_table, &QTableView::doubleClicked, this, [this] {
        if (!selectedName().isEmpty()) emit detailsRequested(selectedName());
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &AdaptersPage::updateButtons);
    updateButtons();
}

void AdaptersPage::setEngine(std::shared_ptr<api::Engine> engine) {
    m_engine = std::move(engine);
    updateButtons();
}

void AdaptersPage::setAdapters(const std::vector<api::AdapterInfo>& adapters) {
    m_model->setAdapters(adapters);
    const QString current = m_baseFilter->currentData().toString();
    const QStringList bases = m_model->baseModels();
    QStringList shown;
    for (int i = 1; i < m_baseFilter->count(); ++i) shown << m_baseFilter->itemData(i).toString();
    if (shown != bases) {
        QSignalBlocker block(m_baseFilter);
        while (m_baseFilter->count() > 1) m_baseFilter->removeItem(1);
        for (const QString& b : bases) m_baseFilter->addItem(b, b);
        const int keep = m_baseFilter->findData(current);
        m_baseFilter->setCurrentIndex(keep < 0 ? 0 : keep);
        m_filter->setBaseModelFilter(m_baseFilter->currentData().toString());
    }
    updateButtons();
}

QString AdaptersPage::selectedName() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty()) return {};
    return rows.first().data(AdapterTableModel::NameRole).toString();
}

bool AdaptersPage::selectAdapter(const QString& name) {
    for (int r = 0; r < m_filter->rowCount(); ++r) {
        const QModelIndex idx = m_filter->index(r, 0);
        if (idx.data(AdapterTableModel::NameRole).toString() != name) continue;
        m_table->selectRow(r);
        return true;
    }
    return false;
}

QString AdaptersPage::message() const { return m_message->text(); }

void AdaptersPage::showMessage(const QString& text, bool error) {
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: #b03030;") : QString());
}

void AdaptersPage::updateButtons() {
    const QString name = selectedName();
    const api::AdapterInfo* a = name.isEmpty() ? nullptr : m_model->adapterAt(m_model->rowOf(name));
    const bool ready = m_engine && !m_busy;
    m_import->setEnabled(ready);
    // The engine moves served adapters between GPU, RAM and disk by itself: Load retries a folder it refused,
    // Unload stops serving a name whatever its tier, and pins and aliases apply to served adapters only.
    const bool served = a && a->compatible;
    m_load->setEnabled(ready && a && !served);
    m_unload->setEnabled(ready && served);
    m_pin->setEnabled(ready && served && !a->pinned);
    m_unpin->setEnabled(ready && served && a->pinned);
    m_alias->setEnabled(ready && served);
    m_remove->setEnabled(ready && a);
    m_details->setEnabled(a != nullptr && m_engine != nullptr);
    m_progress->setVisible(m_busy);
}

void AdaptersPage::run(const QString& what, std::function<Status(api::Engine&)> action,
                       std::function<void()> onSuccess) {
    if (!m_engine || m_busy) return;
    m_busy = true;
    showMessage(what + QStringLiteral("…"), false);
    updateButtons();
    auto engine = m_engine;
    runAsync<Status>(
        this, [engine, action] { return action(*engine); },
        [this, what, onSuccess](Status status) {
            m_busy = false;
            if (status.ok()) {
                showMessage(what + tr(": done"), false);
                if (onSuccess) onSuccess();
                emit changed();
            } else {
                showMessage(what + tr(" failed: ") + QString::fromStdString(status.message), true);
            }
            updateButtons();
        });
}

void AdaptersPage::importFolder(const QString& folder) {
    const std::string f = folder.toStdString();
    run(
        tr("Importing %1").arg(folder), [f](api::Engine& e) { return e.import_adapters(f); },
        [this, folder] { emit folderImported(folder); });
}

void AdaptersPage::loadSelected() {
    const QString name = selectedName();
    const api::AdapterInfo* a = m_model->adapterAt(m_model->rowOf(name));
    if (!a) return;
    // The facade loads by name and path; registered adapters keep their path.
    const std::string n = a->name, p = a->path;
    run(tr("Loading %1").arg(name), [n, p](api::Engine& e) { return e.load_adapter(n, p); });
}

void AdaptersPage::unloadSelected() {
    const std::string n = selectedName().toStdString();
    if (n.empty()) return;
    run(tr("Unloading %1").arg(selectedName()), [n](api::Engine& e) { return e.unload_adapter(n); });
}

void AdaptersPage::pinSelected(bool pinned) {
    const std::string n = selectedName().toStdString();
    if (n.empty()) return;
    run((pinned ? tr("Pinning %1") : tr("Unpinning %1")).arg(selectedName()),
        [n, pinned](api::Engine& e) { return e.pin_adapter(n, pinned); });
}

void AdaptersPage::aliasSelected() {
    const QString name = selectedName();
    if (name.isEmpty() || !askAlias) return;
    const QString alias = askAlias(name).trimmed();
    if (alias.isEmpty()) return;
    const std::string a = alias.toStdString(), n = name.toStdString();
    run(tr("Naming %1 '%2'").arg(name, alias), [a, n](api::Engine& e) { return e.set_alias(a, n); });
}

void AdaptersPage::removeSelected() {
    const QString name = selectedName();
    if (name.isEmpty()) return;
    if (confirm && !confirm(tr("Remove '%1' from the catalog? Its files stay on disk.").arg(name))) return;
    const std::string n = name.toStdString();
    run(tr("Removing %1").arg(name), [n](api::Engine& e) { return e.remove_adapter(n); });
}

}  // namespace loradesk::ui
