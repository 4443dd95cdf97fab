// ChatModel: the playground's conversation with one adapter (or the base): user and assistant turns,
// the assistant turn growing while it streams, with a one-line summary (tokens, TTFT, tier) when it
// ends. messagesJson() is the OpenAI messages array for the next request. GUI thread only.
#pragma once

#include <QAbstractListModel>
#include <nlohmann/json.hpp>
#include <vector>

namespace loradesk::ui {

class ChatModel : public QAbstractListModel {
    Q_OBJECT
  public:
    enum Role { RoleRole = Qt::UserRole + 1, ContentRole, SummaryRole, StreamingRole, FailedRole };

    explicit ChatModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setSystemPrompt(const QString& text) { m_system = text; }
    void addUser(const QString& text);
    void beginAssistant();
    void appendAssistant(const QString& chunk);  // to the streaming turn
    void finishAssistant(const QString& summary);
    void failAssistant(const QString& message);
    void clear();

    bool streaming() const;
    QString lastAssistantText() const;
    // System prompt (if any), then finished user/assistant turns; failed turns are left out.
    nlohmann::ordered_json messagesJson() const;

  private:
    struct Turn {
        QString role;  // user | assistant
        QString content;
        QString summary;
        bool streaming = false;
        bool failed = false;
    };
    std::vector<Turn> m_turns;
    QString m_system;
};

}  // namespace loradesk::ui
