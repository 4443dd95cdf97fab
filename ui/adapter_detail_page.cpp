// The Adapter detail view.
#include "ui/adapter_detail_page.h"

#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QFontDatabase>
#include <QGridLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/models/adapter_history_model.h"
#include "ui/models/async_call.h"
#include "ui/models/format.h"

namespace loradesk::ui {

namespace {

struct Fetched {
    Result<api::AdapterDetails> details = Status::failure(ErrorCode::internal, "not fetched");
    Result<std::vector<api::StatsPoint>> history = Status::failure(ErrorCode::internal, "not fetched");
};

QChartView* viewOf(QChart* chart, QWidget* parent) {
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(180);
    return view;
}

}  // namespace

AdapterDetailPage::AdapterDetailPage(QWidget* parent) : QWidget(parent), m_history(new AdapterHistoryModel(this)) {
    auto* outer = new QVBoxLayout(this);
    m_header = new QLabel(tr("Pick an adapter in the Adapters view."), this);
    m_header->setObjectName("detailHeader");
    QFont f = m_header->font();
    f.setPointSizeF(f.pointSizeF() * 1.4);
    f.setBold(true);
    m_header->setFont(f);
    outer->addWidget(m_header);
    m_facts = new QLabel(this);
    m_facts->setObjectName("detailFacts");
    m_facts->setWordWrap(true);
    m_facts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_facts);

    auto* charts = new QWidget(this);
    auto* grid = new QGridLayout(charts);
    m_requestsChart = makeChart(tr("Requests per minute"));
    m_tokensChart = makeChart(tr("Generated tokens/s"));
    m_ttftChart = makeChart(tr("Time to first token (ms)"));
    grid->addWidget(viewOf(m_requestsChart, charts), 0, 0);
    grid->addWidget(viewOf(m_tokensChart, charts), 0, 1);
    grid->addWidget(viewOf(m_ttftChart, charts), 0, 2);

    auto* tabs = new QTabWidget(this);
    m_modules = new QListWidget(tabs);
    m_modules->setObjectName("modulesList");
    m_versions = new QTableWidget(0, 3, tabs);
    m_versions->setObjectName("versionsTable");
    m_versions->setHorizontalHeaderLabels({tr("Digest"), tr("Created"), tr("Current")});
    m_versions->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_versions->verticalHeader()->hide();
    m_versions->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_events = new QListWidget(tabs);
    m_events->setObjectName("eventsList");
    m_config = new QPlainTextEdit(tabs);
    m_config->setObjectName("configText");
    m_config->setReadOnly(true);
    m_config->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    tabs->addTab(m_modules, tr("Targeted modules"));
    tabs->addTab(m_versions, tr("Versions"));
    tabs->addTab(m_events, tr("Events"));
    tabs->addTab(m_config, tr("adapter_config.json"));

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(charts);
    split->addWidget(tabs);
    outer->addWidget(split, 1);
}

QChart* AdapterDetailPage::makeChart(const QString& title) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignBottom);
    return chart;
}

void AdapterDetailPage::setEngine(std::shared_ptr<api::Engine> engine) { m_engine = std::move(engine); }

QString AdapterDetailPage::headerText() const { return m_header->text(); }

void AdapterDetailPage::showAdapter(const QString& name, int minutes) {
    if (!m_engine || name.isEmpty()) return;
    m_name = name;
    const int generation = ++m_generation;
    m_header->setText(name);
    m_facts->setText(tr("Loading…"));
    auto engine = m_engine;
    const std::string key = name.toStdString();
    runAsync<Fetched>(
        this,
        [engine, key, minutes] {
            Fetched f;
            f.details = engine->adapter_details(key);
            f.history = engine->adapter_history(key, minutes);
            return f;
        },
        [this, generation](Fetched f) {
            if (generation != m_generation) return;
            showDetails(f.details);
            m_history->setPoints(f.history.ok() ? f.history.value() : std::vector<api::StatsPoint>{});
            showHistory();
            emit loaded();
        });
}

void AdapterDetailPage::showDetails(const Result<api::AdapterDetails>& r) {
    m_modules->clear();
    m_events->clear();
    m_versions->setRowCount(0);
    m_config->clear();
    if (!r.ok()) {
        m_facts->setText(tr("No details: %1").arg(QString::fromStdString(r.status().message)));
        return;
    }
    const api::AdapterDetails& d = r.value();
    const api::AdapterInfo& a = d.info;
    QString facts = tr("rank %1 · alpha %2%3 · %4 · tier %5%6\nbase model %7\n%8\n%9")
                        .arg(a.rank)
                        .arg(double(a.alpha))
                        .arg(a.rslora ? tr(" (rsLoRA)") : QString(), formatBytes(a.size_bytes),
                             QString::fromUtf8(api::tier_name(a.tier).data()).toUpper(),
                             a.pinned ? tr(", pinned") : QString(), QString::fromStdString(a.base_model),
                             QString::fromStdString(a.digest), QString::fromStdString(a.path));
    if (!a.compatible) facts += tr("\nDoes not fit the base model: %1").arg(QString::fromStdString(a.incompatibility));
    m_facts->setText(facts);
    for (const auto& t : a.targets) m_modules->addItem(QString::fromStdString(t));
    for (const auto& v : d.versions) {
        const int row = m_versions->rowCount();
        m_versions->insertRow(row);
        m_versions->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(v.digest)));
        m_versions->setItem(row, 1,
                            new QTableWidgetItem(QDateTime::fromSecsSinceEpoch(v.created_unix).toString(Qt::ISODate)));
        m_versions->setItem(row, 2, new QTableWidgetItem(v.current ? tr("current") : QString()));
    }
    for (const auto& e : d.recent_events) m_events->addItem(QString::fromStdString(e));
    m_config->setPlainText(QString::fromStdString(d.config.dump(2)));
}

void AdapterDetailPage::showHistory() {
    struct Plot {
        QChart* chart;
        std::vector<std::pair<AdapterHistoryModel::Column, QString>> series;
    };
    const Plot plots[] = {
        {m_requestsChart, {{AdapterHistoryModel::Requests, tr("requests/min")}}},
        {m_tokensChart, {{AdapterHistoryModel::TokensPerSecond, tr("tokens/s")}}},
        {m_ttftChart, {{AdapterHistoryModel::TtftP50, tr("p50")}, {AdapterHistoryModel::TtftP95, tr("p95")}}},
    };
    for (const Plot& p : plots) {
        p.chart->removeAllSeries();
        for (QAbstractAxis* axis : p.chart->axes()) {
            p.chart->removeAxis(axis);
            delete axis;
        }
        auto* x = new QDateTimeAxis;
        x->setFormat(QStringLiteral("hh:mm"));
        auto* y = new QValueAxis;
        y->setLabelFormat("%.0f");
        p.chart->addAxis(x, Qt::AlignBottom);
        p.chart->addAxis(y, Qt::AlignLeft);
        double maxY = 1;
        for (const auto& [column, name] : p.series) {
            auto* s = new QLineSeries;
            s->setName(name);
            for (int r = 0; r < m_history->rowCount(); ++r) {
                const double v = m_history->value(r, column);
                s->append(m_history->value(r, AdapterHistoryModel::Minute) * 1000.0, v);
                maxY = std::max(maxY, v);
            }
            p.chart->addSeries(s);
            s->attachAxis(x);
            s->attachAxis(y);
        }
        p.chart->legend()->setVisible(p.series.size() > 1);
        y->setRange(0, maxY * 1.15);
        if (m_history->rowCount() > 0) {
            x->setRange(QDateTime::fromSecsSinceEpoch(qint64(m_history->value(0, AdapterHistoryModel::Minute))),
                        QDateTime::fromSecsSinceEpoch(
                            qint64(m_history->value(m_history->rowCount() - 1, AdapterHistoryModel::Minute)) + 60));
        }
    }
}

}  // namespace loradesk::ui
