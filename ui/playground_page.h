// PlaygroundPage: chat with any adapter or the base model; with "Compare" on, the same prompt goes to a
// second adapter and both replies stream side by side. Sampling: temperature and max tokens.
#pragma once

#include <QWidget>
#include <memory>

#include "api/engine.h"

class QCheckBox;
class QDoubleSpinBox;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace loradesk::ui {

class ChatPanel;

class PlaygroundPage : public QWidget {
    Q_OBJECT
  public:
    explicit PlaygroundPage(QWidget* parent = nullptr);

    void setEngine(std::shared_ptr<api::Engine> engine);
    void setAdapters(const std::vector<api::AdapterInfo>& adapters);

    ChatPanel* left() const { return m_left; }
    ChatPanel* right() const { return m_right; }
    void setCompare(bool on);
    void setPrompt(const QString& text);

  public slots:
    void send();
    void stop();

  private:
    void updateButtons();

    std::shared_ptr<api::Engine> m_engine;
    ChatPanel* m_left;
    ChatPanel* m_right;
    QCheckBox* m_compare;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_maxTokens;
    QPlainTextEdit* m_prompt;
    QPushButton* m_send;
    QPushButton* m_stop;
    QPushButton* m_clear;
};

}  // namespace loradesk::ui
