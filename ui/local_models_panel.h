// LocalModelsPanel: the Models page's "On this machine" tab — what the local Hugging Face cache holds (models
// and PEFT adapters that transformers, vLLM or loradesk downloaded), scanned off the GUI thread. A cached
// adapter can be served now; a cached model can be chosen as the base model for the next start.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace loradesk::ui {

class HubCacheModel;

class LocalModelsPanel : public QWidget {
    Q_OBJECT
  public:
    explicit LocalModelsPanel(QWidget* parent = nullptr);

    HubCacheModel* cacheModel() const { return m_model; }
    QTableView* table() const { return m_table; }
    QString cacheDir() const { return m_cacheDir; }
    bool scanning() const { return m_scanning; }
    bool selectRepo(const QString& id);
    QString selectedId() const;
    void setServingAvailable(bool on);

  public slots:
    void refresh();  // rescans the cache in the background; scanned() when the list is current

  signals:
    void scanned();
    void serveRequested(const QString& name, const QString& folder);
    void modelChosen(const QString& id);  // "use as base model": the id as --model would take it

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    void updateButtons();

    HubCacheModel* m_model;
    QSortFilterProxyModel* m_sorted;
    QLabel* m_where;
    QTableView* m_table;
    QPushButton* m_refresh;
    QPushButton* m_serve;
    QPushButton* m_useModel;
    QString m_cacheDir;
    bool m_scanning = false;
    bool m_again = false;
    bool m_scannedOnce = false;
    bool m_canServe = false;
};

}  // namespace loradesk::ui
