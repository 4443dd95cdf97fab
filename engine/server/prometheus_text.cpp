// Prometheus text exposition writers; see prometheus_text.h.
#include "server/prometheus_text.h"

#include <fmt/format.h>

namespace loradesk::server::prom {

std::string escape_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string num(double v) { return fmt::format("{}", v); }

void family(std::string& out, const std::string& name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

namespace {

std::string label_text(const Labels& labels) {
    if (labels.empty()) return {};
    std::string s = "{";
    for (std::size_t i = 0; i < labels.size(); ++i)
        s += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_label_value(labels[i].second));
    return s + "}";
}

}  // namespace

void sample(std::string& out, const std::string& name, const Labels& labels, double value) {
    out += fmt::format("{}{} {}\n", name, label_text(labels), num(value));
}

void histogram(std::string& out, const std::string& name, const Labels& labels, const Histogram& h) {
    uint64_t cumulative = 0;
    Labels with_le = labels;
    with_le.emplace_back("le", "");
    for (std::size_t i = 0; i < h.bounds.size(); ++i) {
        cumulative += h.counts[i];
        with_le.back().second = num(h.bounds[i]);
        sample(out, name + "_bucket", with_le, double(cumulative));
    }
    with_le.back().second = "+Inf";
    sample(out, name + "_bucket", with_le, double(h.count));
    sample(out, name + "_sum", labels, h.sum);
    sample(out, name + "_count", labels, double(h.count));
}

}  // namespace loradesk::server::prom
