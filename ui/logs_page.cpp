// The Logs view.
#include "ui/logs_page.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QVBoxLayout>

#include "ui/models/log_model.h"

namespace loradesk::ui {

LogsPage::LogsPage(LogModel* model, QWidget* parent)
    : QWidget(parent), m_model(model), m_filter(new LogFilterModel(this)) {
    m_filter->setSourceModel(model);
    auto* outer = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    m_level = new QComboBox(this);
    m_level->setObjectName("levelCombo");
    for (log::Level l : {log::Level::trace, log::Level::debug, log::Level::info, log::Level::warn, log::Level::error}) {
        const auto name = log::level_name(l);
        m_level->addItem(QString::fromUtf8(name.data(), qsizetype(name.size())), int(l));
    }
    m_text = new QLineEdit(this);
    m_text->setObjectName("logText");
    m_text->setPlaceholderText(tr("Filter text"));
    m_text->setClearButtonEnabled(true);
    m_follow = new QCheckBox(tr("Follow"), this);
    m_follow->setChecked(true);
    auto* copy = new QPushButton(tr("Copy all"), this);
    auto* clear = new QPushButton(tr("Clear"), this);
    clear->setObjectName("clearLog");
    bar->addWidget(m_level);
    bar->addWidget(m_text, 1);
    bar->addWidget(m_follow);
    bar->addWidget(copy);
    bar->addWidget(clear);
    outer->addLayout(bar);
    m_view = new QListView(this);
    m_view->setObjectName("logView");
    m_view->setModel(m_filter);
    m_view->setUniformItemSizes(true);
    m_view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    outer->addWidget(m_view, 1);

    connect(m_level, &QComboBox::currentIndexChanged, this,
            [this] { m_filter->setMinimumLevel(log::Level(m_level->currentData().toInt())); });
    connect(m_text, &QLineEdit::textChanged, m_filter, &LogFilterModel::setText);
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(m_model->plainText()); });
    connect(clear, &QPushButton::clicked, m_model, &LogModel::clear);
    connect(m_filter, &QAbstractItemModel::rowsInserted, this, [this] {
        if (m_follow->isChecked()) m_view->scrollToBottom();
    });
    setMinimumLevelIndex(2);  // info
}

void LogsPage::setMinimumLevelIndex(int index) { m_level->setCurrentIndex(index); }

}  // namespace loradesk::ui
