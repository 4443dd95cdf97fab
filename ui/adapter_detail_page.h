// AdapterDetailPage: one adapter in depth — config (adapter_config.json), targeted modules, digest and
// versions, recent catalog events, and charts over its per-minute history (requests/min, tokens/s,
// TTFT p50/p95). Details and history are fetched off the GUI thread.
#pragma once

#include <QWidget>
#include <memory>

#include "api/engine.h"

class QChart;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QTableWidget;

namespace loradesk::ui {

class AdapterHistoryModel;

class AdapterDetailPage : public QWidget {
    Q_OBJECT
  public:
    explicit AdapterDetailPage(QWidget* parent = nullptr);

    void setEngine(std::shared_ptr<api::Engine> engine);
    void showAdapter(const QString& name, int minutes = 60);  // fetches in the background
    QString adapterName() const { return m_name; }
    AdapterHistoryModel* history() const { return m_history; }
    QString headerText() const;

  signals:
    void loaded();  // details and history shown (or their error)

  private:
    void showDetails(const Result<api::AdapterDetails>& details);
    void showHistory();
    static QChart* makeChart(const QString& title);

    std::shared_ptr<api::Engine> m_engine;
    QString m_name;
    int m_generation = 0;  // drops answers for an adapter the user already left
    AdapterHistoryModel* m_history;
    QLabel* m_header;
    QLabel* m_facts;
    QListWidget* m_modules;
    QTableWidget* m_versions;
    QListWidget* m_events;
    QPlainTextEdit* m_config;
    QChart* m_requestsChart;
    QChart* m_tokensChart;
    QChart* m_ttftChart;
};

}  // namespace loradesk::ui
