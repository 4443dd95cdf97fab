#include "ui/status_page.h"

#include <QFormLayout>
#include <QVBoxLayout>

namespace loradesk::ui {

QString formatCount(uint64_t n) {
    if (n >= 1000000000ull) return QString::number(double(n) / 1e9, 'f', 2) + " B";
    if (n >= 1000000ull) return QString::number(double(n) / 1e6, 'f', 1) + " M";
    if (n >= 1000ull) return QString::number(double(n) / 1e3, 'f', 1) + " k";
    return QString::number(n);
}

QString formatBytes(uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(n);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    return QString::number(v, 'f', u == 0 ? 0 : 1) + " " + units[u];
}

StatusPage::StatusPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    m_state = new QLabel(this);
    m_state->setObjectName("engineState");
    m_state->setWordWrap(true);
    m_state->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(m_state);
    auto* form = new QFormLayout;
    outer->addLayout(form);
    outer->addStretch(1);
    auto row = [&](const QString& label, const char* name) {
        auto* value = new QLabel(QStringLiteral("—"), this);
        value->setObjectName(name);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        form->addRow(label, value);
        return value;
    };
    m_model = row(tr("Model"), "modelPath");
    m_architecture = row(tr("Architecture"), "architecture");
    m_device = row(tr("Device"), "device");
    m_parameters = row(tr("Parameters"), "parameters");
    m_context = row(tr("Context"), "context");
    m_memory = row(tr("Memory"), "memory");
    m_server = row(tr("Server"), "server");
    m_requests = row(tr("Requests"), "requests");
    m_adapters = row(tr("Adapters"), "adapters");
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &StatusPage::refresh);
}

void StatusPage::showLoading(const QString& what) { m_state->setText(what); }

void StatusPage::showFailure(const QString& message) {
    m_timer.stop();
    m_engine = nullptr;
    m_state->setText(tr("The engine could not start: %1").arg(message));
}

void StatusPage::showEngine(api::Engine* engine, const QString& serverAddress) {
    m_engine = engine;
    m_state->setText(tr("Serving"));
    m_server->setText(serverAddress.isEmpty() ? tr("not listening") : serverAddress);
    const api::ModelInfo m = engine->model();
    m_model->setText(QString::fromStdString(m.path));
    m_architecture->setText(QString::fromStdString(m.architecture));
    m_device->setText(QString::fromStdString(m.device));
    m_parameters->setText(formatCount(m.parameters));
    m_context->setText(tr("%1 tokens").arg(m.max_context));
    m_memory->setText(tr("weights %1 · KV pages %2 · adapter slots %3")
                          .arg(formatBytes(m.weight_bytes), formatBytes(m.kv_bytes), formatBytes(m.lora_slot_bytes)));
    refresh();
    m_timer.start();
}

void StatusPage::refresh() {
    if (!m_engine) return;
    const api::EngineStats s = m_engine->stats();
    m_requests->setText(tr("%1 running · %2 waiting · %3 tokens generated")
                            .arg(s.running)
                            .arg(s.waiting)
                            .arg(formatCount(s.generated_tokens_total)));
    m_adapters->setText(tr("%1 registered").arg(m_engine->adapters().size()));
}

}  // namespace loradesk::ui
