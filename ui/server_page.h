// ServerPage: the OpenAI-compatible HTTP server — address, port, API key, start/stop — and ready-to-paste
// snippets (curl, OpenAI SDK for Python and JavaScript, Continue, Cline) for the chosen model. Without a
// ServerControl (a build without engine/server) it says so and offers no start button.
#pragma once

#include <QWidget>

#include "api/engine.h"
#include "ui/models/server_control.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace loradesk::ui {

class ServerPage : public QWidget {
    Q_OBJECT
  public:
    explicit ServerPage(QWidget* parent = nullptr);

    void setControl(ServerControl* control);  // not owned; may be nullptr
    void setConfig(const ServerConfig& config);
    ServerConfig config() const;
    void setAdapters(const std::vector<api::AdapterInfo>& adapters, const QString& baseModelId);

    bool running() const;
    QString statusText() const;
    QString snippetText(int index) const;

  public slots:
    bool startServer();
    void stopServer();

  signals:
    void configChanged(const loradesk::ui::ServerConfig& config);  // after a successful start
    void runningChanged(bool running, const QString& baseUrl);

  private:
    void updateState();
    void updateSnippets();

    ServerControl* m_control = nullptr;
    QLineEdit* m_host;
    QSpinBox* m_port;
    QLineEdit* m_apiKey;
    QPushButton* m_toggle;
    QLabel* m_status;
    QComboBox* m_model;
    QTabWidget* m_snippets;
};

}  // namespace loradesk::ui
