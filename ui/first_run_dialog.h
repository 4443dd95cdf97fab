// FirstRunDialog: what the desktop app asks at its first start when no model was given — the demo kit (a small
// model and its adapters, to try loradesk at once) or a model already in the local Hugging Face cache (listed
// with scanHubCache, off the GUI thread). The app remembers the answer as --model would (a Hub id as typed), so
// it is asked once; Settings and the Models page change it later.
#pragma once

#include <QDialog>

class QLabel;
class QListWidget;
class QRadioButton;

namespace loradesk::ui {

class FirstRunDialog : public QDialog {
    Q_OBJECT
  public:
    explicit FirstRunDialog(QWidget* parent = nullptr);

    // The Hub id chosen, or empty for the demo kit.
    QString chosenModel() const;
    bool scanning() const { return m_scanning; }
    QListWidget* modelList() const { return m_models; }
    void chooseModel(const QString& id);  // selects a listed model (tests, and a double-click)
    void chooseDemo();

  signals:
    void scanned();

  private:
    void updateChoice();

    QRadioButton* m_demo;
    QRadioButton* m_cached;
    QListWidget* m_models;
    QLabel* m_note;
    bool m_scanning = true;
};

}  // namespace loradesk::ui
