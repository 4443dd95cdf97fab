// The Playground view.
#include "ui/playground_page.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "ui/chat_panel.h"

namespace loradesk::ui {

PlaygroundPage::PlaygroundPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* options = new QHBoxLayout;
    m_compare = new QCheckBox(tr("Compare side by side"), this);
    m_compare->setObjectName("compareCheck");
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setObjectName("temperature");
    m_temperature->setRange(0, 2);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.7);
    m_maxTokens = new QSpinBox(this);
    m_maxTokens->setObjectName("maxTokens");
    m_maxTokens->setRange(1, 32768);
    m_maxTokens->setValue(256);
    options->addWidget(m_compare);
    options->addStretch(1);
    options->addWidget(new QLabel(tr("Temperature"), this));
    options->addWidget(m_temperature);
    options->addWidget(new QLabel(tr("Max tokens"), this));
    options->addWidget(m_maxTokens);
    outer->addLayout(options);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_left = new ChatPanel(split);
    m_left->setObjectName("leftPanel");
    m_right = new ChatPanel(split);
    m_right->setObjectName("rightPanel");
    m_right->hide();
    outer->addWidget(split, 1);

    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName("promptEdit");
    m_prompt->setPlaceholderText(tr("Message (Ctrl+Enter to send)"));
    m_prompt->setMaximumHeight(90);
    outer->addWidget(m_prompt);
    auto* buttons = new QHBoxLayout;
    m_send = new QPushButton(tr("Send"), this);
    m_send->setObjectName("sendButton");
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName("stopButton");
    m_clear = new QPushButton(tr("Clear"), this);
    m_clear->setObjectName("clearButton");
    buttons->addStretch(1);
    buttons->addWidget(m_clear);
    buttons->addWidget(m_stop);
    buttons->addWidget(m_send);
    outer->addLayout(buttons);

    connect(m_compare, &QCheckBox::toggled, this, &PlaygroundPage::setCompare);
    connect(m_send, &QPushButton::clicked, this, &PlaygroundPage::send);
    connect(m_stop, &QPushButton::clicked, this, &PlaygroundPage::stop);
    connect(m_clear, &QPushButton::clicked, this, [this] {
        m_left->clear();
        m_right->clear();
    });
    auto* shortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), m_prompt);
    connect(shortcut, &QShortcut::activated, this, &PlaygroundPage::send);
    for (ChatPanel* p : {m_left, m_right}) connect(p, &ChatPanel::replyFinished, this, &PlaygroundPage::updateButtons);
    updateButtons();
}

void PlaygroundPage::setEngine(std::shared_ptr<api::Engine> engine) {
    m_engine = engine;
    m_left->setEngine(engine);
    m_right->setEngine(engine);
    updateButtons();
}

void PlaygroundPage::setAdapters(const std::vector<api::AdapterInfo>& adapters) {
    QStringList names;
    for (const auto& a : adapters)
        if (a.compatible) names << QString::fromStdString(a.name);
    names.sort();
    m_left->setAdapterNames(names);
    m_right->setAdapterNames(names);
}

void PlaygroundPage::setCompare(bool on) {
    if (m_compare->isChecked() != on) m_compare->setChecked(on);
    m_right->setVisible(on);
}

void PlaygroundPage::setPrompt(const QString& text) { m_prompt->setPlainText(text); }

void PlaygroundPage::send() {
    const QString text = m_prompt->toPlainText().trimmed();
    if (text.isEmpty() || !m_engine || m_left->busy() || m_right->busy()) return;
    api::SamplingParams sampling;
    sampling.temperature = float(m_temperature->value());
    const int maxTokens = m_maxTokens->value();
    bool sent = m_left->send(text, sampling, maxTokens);
    if (m_compare->isChecked()) sent = m_right->send(text, sampling, maxTokens) || sent;
    if (sent) m_prompt->clear();
    updateButtons();
}

void PlaygroundPage::stop() {
    m_left->stop();
    m_right->stop();
}

void PlaygroundPage::updateButtons() {
    const bool busy = m_left->busy() || m_right->busy();
    m_send->setEnabled(m_engine && !busy);
    m_stop->setEnabled(busy);
    m_clear->setEnabled(!busy);
}

}  // namespace loradesk::ui
