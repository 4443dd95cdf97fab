// The Server view.
#include "ui/server_page.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/models/snippets.h"

namespace loradesk::ui {

namespace {

constexpr SnippetKind kKinds[] = {SnippetKind::Curl, SnippetKind::Python, SnippetKind::JavaScript,
                                  SnippetKind::Continue, SnippetKind::Cline};

QString randomKey() {
    QString key = QStringLiteral("sk-loradesk-");
    for (int i = 0; i < 24; ++i) key += QLatin1Char("0123456789abcdef"[QRandomGenerator::global()->bounded(16)]);
    return key;
}

}  // namespace

ServerPage::ServerPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_host = new QLineEdit(QStringLiteral("127.0.0.1"), this);
    m_host->setObjectName("hostEdit");
    m_host->setToolTip(tr("127.0.0.1 serves this machine only; 0.0.0.0 serves the network (set an API key)."));
    m_port = new QSpinBox(this);
    m_port->setObjectName("portSpin");
    m_port->setRange(0, 65535);
    m_port->setValue(8080);
    m_port->setSpecialValueText(tr("any free port"));
    auto* keyRow = new QHBoxLayout;
    m_apiKey = new QLineEdit(this);
    m_apiKey->setObjectName("apiKeyEdit");
    m_apiKey->setPlaceholderText(tr("none (anyone who can reach the port may use it)"));
    auto* generate = new QPushButton(tr("Generate"), this);
    keyRow->addWidget(m_apiKey, 1);
    keyRow->addWidget(generate);
    form->addRow(tr("Address"), m_host);
    form->addRow(tr("Port"), m_port);
    form->addRow(tr("API key"), keyRow);
    outer->addLayout(form);

    auto* stateRow = new QHBoxLayout;
    m_toggle = new QPushButton(tr("Start"), this);
    m_toggle->setObjectName("serverToggle");
    m_status = new QLabel(this);
    m_status->setObjectName("serverStatus");
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    stateRow->addWidget(m_toggle);
    stateRow->addWidget(m_status, 1);
    outer->addLayout(stateRow);

    auto* modelRow = new QHBoxLayout;
    m_model = new QComboBox(this);
    m_model->setObjectName("snippetModel");
    modelRow->addWidget(new QLabel(tr("Snippets for model"), this));
    modelRow->addWidget(m_model, 1);
    outer->addLayout(modelRow);
    m_snippets = new QTabWidget(this);
    m_snippets->setObjectName("snippetTabs");
    for (SnippetKind kind : kKinds) {
        auto* text = new QPlainTextEdit(m_snippets);
        text->setReadOnly(true);
        text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        m_snippets->addTab(text, snippetTitle(kind));
    }
    outer->addWidget(m_snippets, 1);
    auto* copy = new QPushButton(tr("Copy snippet"), this);
    outer->addWidget(copy, 0, Qt::AlignRight);

    connect(generate, &QPushButton::clicked, this, [this] { m_apiKey->setText(randomKey()); });
    connect(m_toggle, &QPushButton::clicked, this, [this] { running() ? stopServer() : void(startServer()); });
    connect(copy, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(snippetText(m_snippets->currentIndex())); });
    connect(m_host, &QLineEdit::textChanged, this, &ServerPage::updateSnippets);
    connect(m_port, &QSpinBox::valueChanged, this, &ServerPage::updateSnippets);
    connect(m_apiKey, &QLineEdit::textChanged, this, &ServerPage::updateSnippets);
    connect(m_model, &QComboBox::currentIndexChanged, this, &ServerPage::updateSnippets);
    updateState();
}

void ServerPage::setControl(ServerControl* control) {
    m_control = control;
    updateState();
}

void ServerPage::setConfig(const ServerConfig& c) {
    m_host->setText(QString::fromStdString(c.host));
    m_port->setValue(c.port);
    m_apiKey->setText(QString::fromStdString(c.api_key));
}

ServerConfig ServerPage::config() const {
    return {m_host->text().trimmed().toStdString(), m_port->value(), m_apiKey->text().trimmed().toStdString()};
}

void ServerPage::setAdapters(const std::vector<api::AdapterInfo>& adapters, const QString& baseModelId) {
    QStringList names{baseModelId};
    for (const auto& a : adapters)
        if (a.compatible) names << QString::fromStdString(a.name);
    QStringList shown;
    for (int i = 0; i < m_model->count(); ++i) shown << m_model->itemText(i);
    if (shown == names) return;
    const QString current = m_model->currentText();
    QSignalBlocker block(m_model);
    m_model->clear();
    m_model->addItems(names);
    const int keep = m_model->findText(current);
    m_model->setCurrentIndex(keep < 0 ? (names.size() > 1 ? 1 : 0) : keep);
    updateSnippets();
}

bool ServerPage::running() const { return m_control && m_control->running(); }
QString ServerPage::statusText() const { return m_status->text(); }

QString ServerPage::snippetText(int index) const {
    auto* text = qobject_cast<QPlainTextEdit*>(m_snippets->widget(index));
    return text ? text->toPlainText() : QString();
}

bool ServerPage::startServer() {
    if (!m_control || m_control->running()) return false;
    const ServerConfig c = config();
    const Status s = m_control->start(c);
    if (!s.ok()) {
        m_status->setText(tr("Could not start: %1").arg(QString::fromStdString(s.message)));
        m_status->setStyleSheet(QStringLiteral("color: #b03030;"));
        updateState();
        return false;
    }
    m_status->setStyleSheet(QString());
    updateState();
    emit configChanged(c);
    return true;
}

void ServerPage::stopServer() {
    if (!m_control) return;
    m_control->stop();
    updateState();
}

void ServerPage::updateState() {
    const bool on = running();
    m_toggle->setEnabled(m_control != nullptr);
    m_toggle->setText(on ? tr("Stop") : tr("Start"));
    for (QWidget* w : {static_cast<QWidget*>(m_host), static_cast<QWidget*>(m_port)}) w->setEnabled(!on);
    m_apiKey->setReadOnly(on);
    const QString url = baseUrlFor(m_host->text(), on ? m_control->port() : m_port->value());
    if (!m_control) {
        m_status->setText(tr("This build has no HTTP server; the engine is available in the app only."));
    } else if (on) {
        m_status->setText(tr("Listening on %1").arg(url));
    } else if (!m_status->text().startsWith(tr("Could not start"))) {
        m_status->setText(tr("Stopped"));
    }
    emit runningChanged(on, on ? url : QString());
    updateSnippets();
}

void ServerPage::updateSnippets() {
    const int port = running() ? m_control->port() : m_port->value();
    const SnippetTarget target{baseUrlFor(m_host->text(), port), m_apiKey->text().trimmed(), m_model->currentText()};
    for (int i = 0; i < m_snippets->count(); ++i)
        if (auto* text = qobject_cast<QPlainTextEdit*>(m_snippets->widget(i)))
            text->setPlainText(snippet(kKinds[i], target));
}

}  // namespace loradesk::ui
