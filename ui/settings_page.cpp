// The Settings view.
#include "ui/settings_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace loradesk::ui {

SettingsPage::SettingsPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    auto* modelRow = new QHBoxLayout;
    m_model = new QLineEdit(this);
    m_model->setObjectName("modelEdit");
    m_model->setPlaceholderText(tr("a folder or a Hub id (org/name); empty: the demo kit"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browse);
    form->addRow(tr("Base model"), modelRow);

    auto* folderBox = new QVBoxLayout;
    m_folders = new QListWidget(this);
    m_folders->setObjectName("folderList");
    m_folders->setMaximumHeight(110);
    auto* folderButtons = new QHBoxLayout;
    auto* add = new QPushButton(tr("Add…"), this);
    add->setObjectName("addFolder");
    auto* remove = new QPushButton(tr("Remove"), this);
    remove->setObjectName("removeFolder");
    folderButtons->addWidget(add);
    folderButtons->addWidget(remove);
    folderButtons->addStretch(1);
    folderBox->addWidget(m_folders);
    folderBox->addLayout(folderButtons);
    form->addRow(tr("Adapter folders"), folderBox);

    m_device = new QComboBox(this);
    m_device->setObjectName("deviceCombo");
    m_device->addItems({QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")});
    m_maxLoras = new QSpinBox(this);
    m_maxLoras->setObjectName("maxLoras");
    m_maxLoras->setRange(1, 256);
    m_maxLorasCpu = new QSpinBox(this);
    m_maxLorasCpu->setRange(1, 4096);
    m_maxRank = new QSpinBox(this);
    m_maxRank->setRange(1, 1024);
    m_kvMemory = new QDoubleSpinBox(this);
    m_kvMemory->setObjectName("kvMemory");
    m_kvMemory->setRange(0.01, 4096);
    m_kvMemory->setDecimals(2);
    m_kvMemory->setSuffix(tr(" GB"));
    form->addRow(tr("Device"), m_device);
    form->addRow(tr("Adapters per batch (GPU slots)"), m_maxLoras);
    form->addRow(tr("Adapters in host memory"), m_maxLorasCpu);
    form->addRow(tr("Largest adapter rank"), m_maxRank);
    form->addRow(tr("KV cache memory"), m_kvMemory);
    m_fp8Activations = new QCheckBox(tr("FP8 activations for FP8 models (W8A8 tensor cores)"), this);
    m_fp8Activations->setObjectName("fp8Activations");
    m_fp8Activations->setToolTip(
        tr("On: FP8 checkpoints multiply in fp8 from a few tokens per step, much faster batches and prefill on "
           "Hopper GPUs. Off: activations stay bf16 (weight-only), results independent of the batch size."));
    form->addRow(tr("FP8 models"), m_fp8Activations);
    m_scheme = new QComboBox(this);
    m_scheme->setObjectName("colorSchemeCombo");
    m_scheme->addItem(tr("As the system"), QStringLiteral("system"));
    m_scheme->addItem(tr("Light"), QStringLiteral("light"));
    m_scheme->addItem(tr("Dark"), QStringLiteral("dark"));
    form->addRow(tr("Appearance"), m_scheme);
    outer->addLayout(form);

    auto* saveRow = new QHBoxLayout;
    m_note = new QLabel(tr("Changes apply at the next start; options given on the command line win."), this);
    m_note->setObjectName("settingsNote");
    m_note->setWordWrap(true);
    auto* saveButton = new QPushButton(tr("Save"), this);
    saveButton->setObjectName("saveSettings");
    saveRow->addWidget(m_note, 1);
    saveRow->addWidget(saveButton);
    outer->addLayout(saveRow);
    outer->addStretch(1);

    pickFolder = [this] { return QFileDialog::getExistingDirectory(this, tr("Choose a folder")); };
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = pickFolder ? pickFolder() : QString();
        if (!dir.isEmpty()) m_model->setText(dir);
    });
    connect(add, &QPushButton::clicked, this, [this] {
        const QString dir = pickFolder ? pickFolder() : QString();
        if (!dir.isEmpty() && m_folders->findItems(dir, Qt::MatchExactly).isEmpty()) m_folders->addItem(dir);
    });
    connect(remove, &QPushButton::clicked, this, [this] { delete m_folders->currentItem(); });
    connect(saveButton, &QPushButton::clicked, this, &SettingsPage::save);
    connect(m_scheme, &QComboBox::activated, this,
            [this] { emit colorSchemeChanged(m_scheme->currentData().toString()); });
    setSettings(m_settings);
}

void SettingsPage::setSettings(const AppSettings& s) {
    m_settings = s;
    m_model->setText(s.modelDir);
    m_folders->clear();
    m_folders->addItems(s.adapterFolders);
    m_device->setCurrentText(s.device);
    m_maxLoras->setValue(s.maxLoras);
    m_maxLorasCpu->setValue(s.maxLorasCpu);
    m_maxRank->setValue(s.maxLoraRank);
    m_kvMemory->setValue(s.kvMemoryGb);
    m_fp8Activations->setChecked(!s.fp8WeightOnly);
    m_scheme->setCurrentIndex(std::max(0, m_scheme->findData(s.colorScheme)));
}

AppSettings SettingsPage::settings() const {
    AppSettings s = m_settings;
    s.modelDir = m_model->text().trimmed();
    s.adapterFolders.clear();
    for (int i = 0; i < m_folders->count(); ++i) s.addAdapterFolder(m_folders->item(i)->text());
    s.device = m_device->currentText();
    s.maxLoras = m_maxLoras->value();
    s.maxLorasCpu = m_maxLorasCpu->value();
    s.maxLoraRank = m_maxRank->value();
    s.kvMemoryGb = m_kvMemory->value();
    s.fp8WeightOnly = !m_fp8Activations->isChecked();
    s.colorScheme = m_scheme->currentData().toString();
    return s;
}

void SettingsPage::save() {
    m_settings = settings();
    m_note->setText(tr("Saved. Restart LoraDesk to load the new model or limits."));
    emit settingsSaved(m_settings);
}

}  // namespace loradesk::ui
