// The Dashboard view.
#include "ui/dashboard_page.h"

#include <QChart>
#include <QChartView>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineSeries>
#include <QPieSeries>
#include <QProgressBar>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>

#include "ui/models/format.h"
#include "ui/models/stats_history_model.h"

namespace loradesk::ui {

DashboardPage::DashboardPage(QWidget* parent) : QWidget(parent), m_history(new StatsHistoryModel(300, this)) {
    auto* outer = new QVBoxLayout(this);
    m_state = new QLabel(tr("Starting the engine…"), this);
    m_state->setObjectName("engineState");
    m_state->setWordWrap(true);
    outer->addWidget(m_state);
    m_model = new QLabel(this);
    m_model->setObjectName("modelSummary");
    m_model->setWordWrap(true);
    m_model->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_model);

    auto* numbers = new QHBoxLayout;
    auto* numberBox = new QWidget(this);
    numberBox->setLayout(numbers);
    m_tokens = bigNumber(tr("tokens/s"), "tokensPerSecond", numberBox);
    m_running = bigNumber(tr("running"), "running", numberBox);
    m_waiting = bigNumber(tr("waiting"), "waiting", numberBox);
    m_hitRate = bigNumber(tr("prefix-cache hits"), "hitRate", numberBox);
    outer->addWidget(numberBox);

    auto* middle = new QHBoxLayout;
    auto* chartTokens = new QChart;
    chartTokens->setTitle(tr("Generated tokens/s"));
    chartTokens->legend()->hide();
    m_tokenSeries = new QLineSeries(chartTokens);
    chartTokens->addSeries(m_tokenSeries);
    m_axisX = new QValueAxis(chartTokens);
    m_axisX->setTitleText(tr("seconds"));
    m_axisX->setLabelFormat("%d");
    m_axisY = new QValueAxis(chartTokens);
    m_axisY->setLabelFormat("%.0f");
    chartTokens->addAxis(m_axisX, Qt::AlignBottom);
    chartTokens->addAxis(m_axisY, Qt::AlignLeft);
    m_tokenSeries->attachAxis(m_axisX);
    m_tokenSeries->attachAxis(m_axisY);
    auto* tokenView = new QChartView(chartTokens, this);
    tokenView->setRenderHint(QPainter::Antialiasing);
    tokenView->setMinimumHeight(220);
    middle->addWidget(tokenView, 3);

    auto* chartMemory = new QChart;
    chartMemory->setTitle(tr("Device memory"));
    m_memory = new QPieSeries(chartMemory);
    m_memory->setHoleSize(0.35);
    chartMemory->addSeries(m_memory);
    chartMemory->legend()->setAlignment(Qt::AlignRight);
    auto* memoryView = new QChartView(chartMemory, this);
    memoryView->setRenderHint(QPainter::Antialiasing);
    middle->addWidget(memoryView, 2);
    outer->addLayout(middle, 1);

    auto* occupancy = new QGroupBox(tr("Occupancy"), this);
    auto* form = new QFormLayout(occupancy);
    m_kv = new QProgressBar(occupancy);
    m_kv->setObjectName("kvUsage");
    m_kv->setFormat(tr("%v / %m pages"));
    m_gpuSlots = new QProgressBar(occupancy);
    m_gpuSlots->setObjectName("gpuSlots");
    m_gpuSlots->setFormat(tr("%v / %m slots"));
    m_tiers = new QLabel(occupancy);
    m_tiers->setObjectName("tiers");
    form->addRow(tr("KV cache"), m_kv);
    form->addRow(tr("Adapter slots"), m_gpuSlots);
    form->addRow(tr("Adapters by tier"), m_tiers);
    m_scheduler = new QLabel(occupancy);
    m_scheduler->setObjectName("scheduler");
    m_scheduler->setToolTip(
        tr("Mean sequences and wall time per engine step since start; preempted requests "
           "recompute their KV when readmitted (raise the KV memory or --kv-reserve-tokens)"));
    form->addRow(tr("Scheduler"), m_scheduler);
    outer->addWidget(occupancy);
}

QLabel* DashboardPage::bigNumber(const QString& caption, const char* name, QWidget* parent) {
    auto* box = new QVBoxLayout;
    auto* value = new QLabel(QStringLiteral("—"), parent);
    value->setObjectName(QLatin1String(name));
    QFont f = value->font();
    f.setPointSizeF(f.pointSizeF() * 2.0);
    f.setBold(true);
    value->setFont(f);
    value->setAlignment(Qt::AlignCenter);
    auto* label = new QLabel(caption, parent);
    label->setAlignment(Qt::AlignCenter);
    box->addWidget(value);
    box->addWidget(label);
    static_cast<QHBoxLayout*>(parent->layout())->addLayout(box);
    return value;
}

void DashboardPage::showMessage(const QString& text) { m_state->setText(text); }

QString DashboardPage::valueText(const char* objectName) const {
    if (auto* l = findChild<QLabel*>(QLatin1String(objectName))) return l->text();
    if (auto* p = findChild<QProgressBar*>(QLatin1String(objectName))) return p->text();
    return {};
}

void DashboardPage::showSnapshot(const EngineSnapshot& s) {
    const api::ModelInfo& m = s.model;
    const api::EngineStats& st = s.stats;
    m_state->setText(tr("Serving %1 on %2").arg(QString::fromStdString(m.id), QString::fromStdString(m.device)));
    // A quantized checkpoint says how ("awq int4, group 128") beside its size.
    const QString quant = m.quantization_detail.empty()
                              ? QString()
                              : QStringLiteral(" (%1)").arg(QString::fromStdString(m.quantization_detail));
    m_model->setText(tr("%1 · %2 parameters%3 · context %4 · %5")
                         .arg(QString::fromStdString(m.architecture), formatCount(m.parameters), quant)
                         .arg(m.max_context)
                         .arg(QString::fromStdString(m.path)));
    m_tokens->setText(QString::number(st.tokens_per_second, 'f', 1));
    m_running->setText(QString::number(st.running));
    m_waiting->setText(QString::number(st.waiting));
    m_hitRate->setText(QString::number(StatsHistoryModel::prefixHitPercent(st), 'f', 1) + QStringLiteral(" %"));
    m_kv->setRange(0, std::max(1, st.kv_pages_total));
    m_kv->setValue(st.kv_pages_total - st.kv_pages_free);
    m_gpuSlots->setRange(0, std::max(1, m.max_loras));
    m_gpuSlots->setValue(std::min(st.gpu_slots_used, std::max(1, m.max_loras)));
    int gpu = 0, cpu = 0, disk = 0;
    for (const auto& a : s.adapters) (a.tier == api::Tier::gpu ? gpu : a.tier == api::Tier::cpu ? cpu : disk)++;
    m_tiers->setText(tr("GPU %1 · CPU %2 · disk %3").arg(gpu).arg(cpu).arg(disk));
    auto mean = [](const Histogram& h) { return h.count ? h.sum / double(h.count) : 0.0; };
    m_scheduler->setText(tr("batch %1 · step %2 ms · preempted %3 (now %4) · waiting for an adapter slot %5")
                             .arg(mean(st.batch_size), 0, 'f', 1)
                             .arg(1e3 * mean(st.step_seconds), 0, 'f', 1)
                             .arg(st.preemptions_total)
                             .arg(st.swapped)
                             .arg(st.waiting_for_adapter));

    const std::pair<QString, std::size_t> parts[] = {
        {tr("weights %1").arg(formatBytes(m.weight_bytes)), m.weight_bytes},
        {tr("KV %1").arg(formatBytes(m.kv_bytes)), m.kv_bytes},
        {tr("adapter slots %1").arg(formatBytes(m.lora_slot_bytes)), m.lora_slot_bytes}};
    if (m_memory->count() != 3) {
        m_memory->clear();
        for (const auto& [label, bytes] : parts) m_memory->append(label, double(bytes));
    } else {
        for (int i = 0; i < 3; ++i) {
            m_memory->slices()[i]->setLabel(parts[i].first);
            m_memory->slices()[i]->setValue(double(parts[i].second));
        }
    }
    m_history->append(s);
    updateTokenChart();
}

void DashboardPage::updateTokenChart() {
    QList<QPointF> points;
    double maxY = 1;
    for (int r = 0; r < m_history->rowCount(); ++r) {
        const double y = m_history->value(r, StatsHistoryModel::TokensPerSecond);
        points << QPointF(m_history->value(r, StatsHistoryModel::Seconds), y);
        maxY = std::max(maxY, y);
    }
    m_tokenSeries->replace(points);
    const double x1 = points.isEmpty() ? 60 : std::max(60.0, points.back().x());
    m_axisX->setRange(std::max(0.0, x1 - 300), x1);
    m_axisY->setRange(0, maxY * 1.2);
}

}  // namespace loradesk::ui
