// SettingsPage: what the app remembers for its next start — the model folder, the adapter folders
// scanned at start and the engine limits. Changing the model or limits needs an engine restart, so
// the page saves them (settingsSaved) and says they apply at the next start. The appearance (system, light or
// dark colours) applies at once.
#pragma once

#include <QWidget>
#include <functional>

#include "ui/models/app_settings.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace loradesk::ui {

class SettingsPage : public QWidget {
    Q_OBJECT
  public:
    explicit SettingsPage(QWidget* parent = nullptr);

    void setSettings(const AppSettings& settings);
    AppSettings settings() const;  // the stored settings with the form's values

    std::function<QString()> pickFolder;  // overridable for tests; default QFileDialog

  public slots:
    void save();

  signals:
    void settingsSaved(const loradesk::ui::AppSettings& settings);
    void colorSchemeChanged(const QString& scheme);  // "system", "light" or "dark"

  private:
    AppSettings m_settings;
    QLineEdit* m_model;
    QListWidget* m_folders;
    QComboBox* m_device;
    QComboBox* m_scheme;
    QSpinBox* m_maxLoras;
    QSpinBox* m_maxLorasCpu;
    QSpinBox* m_maxRank;
    QDoubleSpinBox* m_kvMemory;
    QCheckBox* m_fp8Activations;
    QLabel* m_note;
};

}  // namespace loradesk::ui
