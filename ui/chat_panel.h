// ChatPanel: one side of the playground — an adapter picker (or the base model), the conversation and
// a status line. send() streams the reply through a ChatStream; the panel never blocks.
#pragma once

#include <QWidget>
#include <memory>

#include "api/engine.h"

class QComboBox;
class QLabel;
class QListView;

namespace loradesk::ui {

class ChatModel;
class ChatStream;

class ChatPanel : public QWidget {
    Q_OBJECT
  public:
    explicit ChatPanel(QWidget* parent = nullptr);

    void setEngine(std::shared_ptr<api::Engine> engine);
    void setAdapterNames(const QStringList& names);  // compatible adapters; "base" is always offered
    void setTarget(const QString& name);             // "" or "base" = the base model
    QString target() const;                          // adapter name, "" for the base

    bool send(const QString& text, const api::SamplingParams& sampling, int maxTokens);
    void stop();
    void clear();
    bool busy() const;

    ChatModel* chat() const { return m_chat; }
    QString status() const;

  signals:
    void replyFinished();

  private:
    std::shared_ptr<api::Engine> m_engine;
    ChatModel* m_chat;
    ChatStream* m_stream;
    QComboBox* m_target;
    QListView* m_view;
    QLabel* m_status;
    QString m_tier;
};

}  // namespace loradesk::ui
