// One chat column of the playground.
#include "ui/chat_panel.h"

#include <QComboBox>
#include <QLabel>
#include <QListView>
#include <QVBoxLayout>

#include "ui/models/chat_model.h"
#include "ui/models/chat_stream.h"

namespace loradesk::ui {

ChatPanel::ChatPanel(QWidget* parent) : QWidget(parent), m_chat(new ChatModel(this)), m_stream(new ChatStream(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_target = new QComboBox(this);
    m_target->setObjectName("targetCombo");
    m_target->addItem(tr("Base model"), QString());
    layout->addWidget(m_target);
    m_view = new QListView(this);
    m_view->setObjectName("chatView");
    m_view->setModel(m_chat);
    m_view->setWordWrap(true);
    m_view->setUniformItemSizes(false);
    m_view->setSpacing(4);
    m_view->setSelectionMode(QAbstractItemView::NoSelection);
    layout->addWidget(m_view, 1);
    m_status = new QLabel(this);
    m_status->setObjectName("chatStatus");
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    connect(m_stream, &ChatStream::submitted, this, [this](const QString& adapter, const QString& tier, int prompt) {
        m_tier = tier;
        m_status->setText(tr("%1 · %2 · %3 prompt tokens")
                              .arg(adapter.isEmpty() ? tr("base model") : adapter, tier.toUpper())
                              .arg(prompt));
    });
    connect(m_stream, &ChatStream::text, this, [this](const QString& chunk) {
        m_chat->appendAssistant(chunk);
        m_view->scrollToBottom();
    });
    connect(m_stream, &ChatStream::finished, this, [this](const ChatResult& r) {
        const QString summary = tr("%1 tokens · TTFT %2 ms · %3 ms · %4")
                                    .arg(r.completionTokens)
                                    .arg(r.ttftMs, 0, 'f', 0)
                                    .arg(r.latencyMs, 0, 'f', 0)
                                    .arg(r.finishReason);
        m_chat->finishAssistant(summary);
        m_status->setText(summary +
                          (r.cachedTokens ? tr(" · %1 prompt tokens from cache").arg(r.cachedTokens) : QString()));
        emit replyFinished();
    });
    connect(m_stream, &ChatStream::failed, this, [this](const QString& message) {
        m_chat->failAssistant(message);
        m_status->setText(tr("Failed: %1").arg(message));
        emit replyFinished();
    });
}

void ChatPanel::setEngine(std::shared_ptr<api::Engine> engine) { m_engine = std::move(engine); }

void ChatPanel::setAdapterNames(const QStringList& names) {
    QStringList shown;
    for (int i = 1; i < m_target->count(); ++i) shown << m_target->itemData(i).toString();
    if (shown == names) return;
    const QString current = target();
    QSignalBlocker block(m_target);
    while (m_target->count() > 1) m_target->removeItem(1);
    for (const QString& n : names) m_target->addItem(n, n);
    setTarget(current);
}

void ChatPanel::setTarget(const QString& name) {
    const int i = (name.isEmpty() || name == QLatin1String("base")) ? 0 : m_target->findData(name);
    m_target->setCurrentIndex(i < 0 ? 0 : i);
}

QString ChatPanel::target() const { return m_target->currentData().toString(); }

bool ChatPanel::send(const QString& text, const api::SamplingParams& sampling, int maxTokens) {
    if (!m_engine || m_stream->busy() || text.trimmed().isEmpty()) return false;
    m_chat->addUser(text);
    api::GenerateRequest r;
    r.model = target().toStdString();
    r.messages = m_chat->messagesJson();
    r.sampling = sampling;
    r.stop.max_tokens = maxTokens;
    m_chat->beginAssistant();
    m_status->setText(tr("Waiting for the first token…"));
    return m_stream->start(m_engine, std::move(r));
}

void ChatPanel::stop() { m_stream->cancel(); }

void ChatPanel::clear() {
    if (m_stream->busy()) return;
    m_chat->clear();
    m_status->clear();
}

bool ChatPanel::busy() const { return m_stream->busy(); }

QString ChatPanel::status() const { return m_status->text(); }

}  // namespace loradesk::ui
