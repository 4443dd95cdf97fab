// AdaptersPage: the adapter table with its filter bar and actions — import a folder, load, unload, pin,
// unpin, alias, remove from the catalog (files are never deleted). Every action runs off the GUI thread;
// the page shows a busy bar meanwhile and the engine's own message when it fails (e.g. an adapter for
// another base model). Dialogs (folder, alias, confirm) go through overridable hooks so tests can drive
// the page without modal windows.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>

#include "api/engine.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace loradesk::ui {

class AdapterFilterModel;
class AdapterTableModel;

class AdaptersPage : public QWidget {
    Q_OBJECT
  public:
    explicit AdaptersPage(QWidget* parent = nullptr);

    void setEngine(std::shared_ptr<api::Engine> engine);
    void setAdapters(const std::vector<api::AdapterInfo>& adapters);  // from the poller

    AdapterTableModel* tableModel() const { return m_model; }
    AdapterFilterModel* filterModel() const { return m_filter; }
    QTableView* table() const { return m_table; }
    QString selectedName() const;
    bool selectAdapter(const QString& name);
    bool busy() const { return m_busy; }
    QString message() const;

    // Hooks for the dialogs; defaults open QFileDialog / QInputDialog / QMessageBox.
    std::function<QString()> pickFolder;
    std::function<QString(const QString& name)> askAlias;
    std::function<bool(const QString& question)> confirm;

  public slots:
    void importFolder(const QString& folder);
    void loadSelected();
    void unloadSelected();
    void pinSelected(bool pinned);
    void aliasSelected();
    void removeSelected();

  signals:
    void changed();  // an action succeeded: poll the engine now
    void folderImported(const QString& folder);
    void detailsRequested(const QString& name);

  private:
    void run(const QString& what, std::function<Status(api::Engine&)> action, std::function<void()> onSuccess = {});
    void updateButtons();
    void showMessage(const QString& text, bool error);

    std::shared_ptr<api::Engine> m_engine;
    AdapterTableModel* m_model;
    AdapterFilterModel* m_filter;
    QTableView* m_table;
    QLineEdit* m_nameFilter;
    QComboBox* m_baseFilter;
    QComboBox* m_tierFilter;
    QCheckBox* m_pinnedOnly;
    QPushButton* m_import;
    QPushButton* m_load;
    QPushButton* m_unload;
    QPushButton* m_pin;
    QPushButton* m_unpin;
    QPushButton* m_alias;
    QPushButton* m_remove;
    QPushButton* m_details;
    QProgressBar* m_progress;
    QLabel* m_message;
    bool m_busy = false;
};

}  // namespace loradesk::ui
