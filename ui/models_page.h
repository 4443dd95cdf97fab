// ModelsPage: models and adapters from the Hugging Face Hub — "On this machine" (the local Hugging Face cache)
// and "Discover" (search and download). It serves an adapter that either tab offers through the engine's own
// load_adapter call, off the GUI thread, and shows the engine's answer. The engine comes from outside, as for
// the other pages; a download refreshes the cached list.
#pragma once

#include <QWidget>
#include <memory>

#include "api/engine.h"

class QLabel;
class QTabWidget;

namespace loradesk::ui {

class DiscoverPanel;
class LocalModelsPanel;

class ModelsPage : public QWidget {
    Q_OBJECT
  public:
    enum Tab { Local, Discover };

    explicit ModelsPage(QWidget* parent = nullptr);

    void setEngine(std::shared_ptr<api::Engine> engine);
    void setServedModel(const QString& id);  // from the poller's snapshot
    void showTab(Tab tab);

    LocalModelsPanel* local() const { return m_local; }
    DiscoverPanel* discover() const { return m_discover; }
    bool busy() const { return m_busy; }
    QString message() const;

  public slots:
    // Loads the adapter folder into the engine as `name`; adaptersChanged() when it is served.
    void serveAdapter(const QString& name, const QString& folder);

  signals:
    void adaptersChanged();
    void modelChosen(const QString& id);

  private:
    void showMessage(const QString& text, bool error);

    std::shared_ptr<api::Engine> m_engine;
    QTabWidget* m_tabs;
    LocalModelsPanel* m_local;
    DiscoverPanel* m_discover;
    QLabel* m_message;
    bool m_busy = false;
};

}  // namespace loradesk::ui
