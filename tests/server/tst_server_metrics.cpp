// engine/server /metrics: the Prometheus text exposition (0.0.4) checked with a small parser: TYPE before
// samples, families contiguous, name/label syntax, escaped label values, cumulative buckets ending in +Inf
// equal to _count; and the counters move with real requests.
#include <QtTest>

#include <regex>
#include <set>

#include "scripted_engine.h"
#include "server/router.h"
#include "server/server_metrics.h"
#include "server_test_util.h"

using namespace loradesk;
using namespace loradesk::server;
using namespace loradesk::testing;
using nlohmann::json;

namespace {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

// Parses the exposition and fails the test on any format violation. Returns the samples in order.
std::vector<Sample> parse_exposition(const std::string& text, QString* error) {
    static const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
    static const std::regex kLabel("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\\\n]|\\\\\\\\|\\\\\"|\\\\n)*)\"");
    std::vector<Sample> samples;
    std::map<std::string, std::string> types;
    std::set<std::string> closed;  // families whose samples ended (must not reappear)
    std::string current;
    if (text.empty() || text.back() != '\n') return *error = "must end with a newline", samples;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# HELP ", 0) == 0) continue;
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream t(line.substr(7));
            std::string name, type;
            t >> name >> type;
            if (!std::regex_match(name, kName))
                return *error = QString("bad family name: %1").arg(name.c_str()), samples;
            if (types.count(name)) return *error = QString("second TYPE for %1").arg(name.c_str()), samples;
            if (!std::set<std::string>{"counter", "gauge", "histogram", "summary", "untyped"}.count(type))
                return *error = QString("bad type %1").arg(type.c_str()), samples;
            types[name] = type;
            continue;
        }
        Sample s;
        const std::size_t brace = line.find('{'), space = line.rfind(' ');
        s.name = line.substr(0, std::min(brace, line.find(' ')));
        if (!std::regex_match(s.name, kName))
            return *error = QString("bad sample name in: %1").arg(line.c_str()), samples;
        if (brace != std::string::npos) {
            const std::size_t close = line.rfind('}');
            std::string labels = line.substr(brace + 1, close - brace - 1);
            for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it)
                s.labels[(*it)[1]] = (*it)[2];
            std::string rebuilt;
            for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it)
                rebuilt += (rebuilt.empty() ? "" : ",") + it->str();
            if (rebuilt != labels) return *error = QString("bad labels in: %1").arg(line.c_str()), samples;
        }
        const std::string value = line.substr(space + 1);
        s.value = value == "+Inf" ? INFINITY : std::stod(value);
        std::string family = s.name;
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            const std::string base = s.name.substr(0, s.name.size() - std::min(s.name.size(), strlen(suffix)));
            if (s.name.size() > strlen(suffix) && s.name.substr(base.size()) == suffix && types[base] == "histogram")
                family = base;
        }
        if (!types.count(family)) return *error = QString("sample before TYPE: %1").arg(line.c_str()), samples;
        if (family != current) {
            if (closed.count(family)) return *error = QString("family %1 not contiguous").arg(family.c_str()), samples;
            if (!current.empty()) closed.insert(current);
            current = family;
        }
        samples.push_back(std::move(s));
    }
    // Histograms: per label set, buckets cumulative, ending with +Inf == _count.
    std::map<std::string, std::vector<std::pair<double, double>>> buckets;
    std::map<std::string, double> counts;
    for (const Sample& s : samples) {
        auto labels = s.labels;
        const std::string le = labels["le"];
        labels.erase("le");
        std::string key;
        for (auto& [k, v] : labels) key += k + "=" + v + ",";
        if (s.name.size() > 7 && s.name.substr(s.name.size() - 7) == "_bucket")
            buckets[s.name.substr(0, s.name.size() - 7) + "|" + key].push_back(
                {le == "+Inf" ? INFINITY : std::stod(le), s.value});
        if (s.name.size() > 6 && s.name.substr(s.name.size() - 6) == "_count")
            counts[s.name.substr(0, s.name.size() - 6) + "|" + key] = s.value;
    }
    for (auto& [key, list] : buckets) {
        for (std::size_t i = 1; i < list.size(); ++i)
            if (list[i].first <= list[i - 1].first || list[i].second < list[i - 1].second)
                return *error = QString("buckets not monotonic: %1").arg(key.c_str()), samples;
        if (list.empty() || !std::isinf(list.back().first))
            return *error = QString("no +Inf bucket: %1").arg(key.c_str()), samples;
        if (!counts.count(key) || counts[key] != list.back().second)
            return *error = QString("+Inf bucket != _count: %1").arg(key.c_str()), samples;
    }
    return samples;
}

double value_of(const std::vector<Sample>& samples, const std::string& name,
                std::map<std::string, std::string> labels) {
    for (const Sample& s : samples)
        if (s.name == name && s.labels == labels) return s.value;
    return -1;
}

}  // namespace

class TstServerMetrics : public QObject {
    Q_OBJECT
  private slots:
    void parser_catches_violations_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("no newline") << "# TYPE a counter\na 1";
        QTest::newRow("sample before type") << "a 1\n# TYPE a counter\n";
        QTest::newRow("bad name") << "# TYPE 1a counter\n1a 1\n";
        QTest::newRow("unescaped quote") << "# TYPE a counter\na{x=\"q\"q\"} 1\n";
        QTest::newRow("not contiguous") << "# TYPE a counter\n# TYPE b counter\na 1\nb 1\na{x=\"1\"} 2\n";
        QTest::newRow("inf != count")
            << "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n";
        QTest::newRow("not monotonic") << "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} "
                                          "1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n";
    }
    void parser_catches_violations() {
        QFETCH(QString, text);
        QString error;
        parse_exposition(text.toStdString(), &error);
        QVERIFY(!error.isEmpty());
    }

    void exposition_is_valid_and_counts_requests() {
        ScriptedEngine engine;
        QVERIFY(engine.load_adapter("we\"ird\\name\nx", "/").ok());
        Router router(engine, ServerOptions{});
        auto chat = [&](const std::string& model, const std::string& text) {
            return router.handle(post_json("/v1/chat/completions",
                                           {{"model", model}, {"messages", {{{"role", "user"}, {"content", text}}}}}));
        };
        QCOMPARE(chat("sql-lora", "a b").status, 200);
        QCOMPARE(chat("sql", "a b c").status, 200);
        QCOMPARE(chat("", "x").status, 200);
        QCOMPARE(chat("", "#busy").status, 429);
        QCOMPARE(chat("we\"ird\\name\nx", "y").status, 200);
        HttpResponse r =
            router.handle(post_json("/v1/completions", {{"model", "sql-lora"}, {"prompt", "z"}, {"stream", true}}));
        run_stream(r);

        HttpResponse m = router.handle(make_request("GET", "/metrics"));
        QCOMPARE(m.status, 200);
        QCOMPARE(m.content_type, std::string("text/plain; version=0.0.4; charset=utf-8"));
        QString error;
        const std::vector<Sample> samples = parse_exposition(m.body, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error + "\n" + QString::fromStdString(m.body)));
        QCOMPARE(value_of(samples, "loradesk_requests_total",
                          {{"adapter", "sql-lora"}, {"endpoint", "chat"}, {"code", "200"}}),
                 2.0);
        QCOMPARE(value_of(samples, "loradesk_requests_total",
                          {{"adapter", "sql-lora"}, {"endpoint", "completions"}, {"code", "200"}}),
                 1.0);
        QCOMPARE(
            value_of(samples, "loradesk_requests_total", {{"adapter", "base"}, {"endpoint", "chat"}, {"code", "200"}}),
            1.0);
        QCOMPARE(
            value_of(samples, "loradesk_requests_total", {{"adapter", "base"}, {"endpoint", "chat"}, {"code", "429"}}),
            1.0);
        QCOMPARE(value_of(samples, "loradesk_prompt_tokens_total", {{"adapter", "sql-lora"}}), 6.0);
        QCOMPARE(value_of(samples, "loradesk_generation_tokens_total", {{"adapter", "sql-lora"}}), 12.0);
        QCOMPARE(value_of(samples, "loradesk_time_to_first_token_seconds_count", {{"adapter", "sql-lora"}}), 3.0);
        QCOMPARE(value_of(samples, "loradesk_e2e_request_latency_seconds_count", {{"adapter", "base"}}), 1.0);
        QCOMPARE(value_of(samples, "loradesk_adapter_loaded", {{"adapter", "sql-lora"}, {"rank", "16"}}), 1.0);
        // chat-lora is on disk and served nothing: outside the default activity window, it has no series.
        QCOMPARE(value_of(samples, "loradesk_adapter_loaded", {{"adapter", "chat-lora"}, {"rank", "8"}}), -1.0);
        QCOMPARE(value_of(samples, "loradesk_kv_cache_usage_ratio", {}), 0.25);
        QCOMPARE(value_of(samples, "loradesk_requests_running", {{"adapter", "base"}}), 0.0);
        // The user-supplied adapter name is escaped, never breaking the line format.
        const std::string escaped = "adapter=\"we\\\"ird\\\\name\\nx\"";
        QVERIFY(m.body.find(escaped) != std::string::npos);
        // Engine-wide families and vLLM's names for the same quantities.
        QCOMPARE(value_of(samples, "loradesk_engine_requests_running", {}), 0.0);
        QVERIFY(value_of(samples, "loradesk_preemptions_total", {{"reason", "kv_cache_full"}}) >= 0);
        QVERIFY(value_of(samples, "loradesk_step_duration_seconds_count", {}) >= 0);
        QVERIFY(value_of(samples, "vllm:num_requests_running", {{"model_name", engine.model().id}}) >= 0);
        QVERIFY(value_of(samples, "vllm:num_requests_waiting", {{"model_name", engine.model().id}}) >= 0);
        QVERIFY(value_of(samples, "vllm:kv_cache_usage_perc", {{"model_name", engine.model().id}}) >= 0);
        QCOMPARE(value_of(samples, "vllm:time_to_first_token_seconds_count", {{"model_name", engine.model().id}}), 5.0);
        QCOMPARE(value_of(samples, "vllm:e2e_request_latency_seconds_count", {{"model_name", engine.model().id}}), 5.0);
        bool lora_info = false;
        for (const Sample& s : samples)
            if (s.name == "vllm:lora_requests_info")
                lora_info = s.labels.count("running_lora_adapters") && s.labels.count("waiting_lora_adapters") &&
                            s.labels.at("max_lora") == std::to_string(engine.stats().max_loras);
        QVERIFY(lora_info);
    }

    void adapter_window_zero_lists_every_adapter() {
        ScriptedEngine engine;
        ServerOptions options;
        options.metrics_adapter_window_s = 0;
        Router router(engine, options);
        HttpResponse m = router.handle(make_request("GET", "/metrics"));
        QString error;
        const std::vector<Sample> samples = parse_exposition(m.body, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(value_of(samples, "loradesk_adapter_loaded", {{"adapter", "chat-lora"}, {"rank", "8"}}), 0.0);
        QCOMPARE(value_of(samples, "loradesk_adapter_tier", {{"adapter", "chat-lora"}, {"tier", "disk"}}), 1.0);
    }
};

QTEST_GUILESS_MAIN(TstServerMetrics)
#include "tst_server_metrics.moc"
